/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pool against a real directory: jobs for one target coalesce (one
 * running, one waiting), every waiter hears back once, failures come back as
 * results. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "flush.h"
#include "tap.h"

static struct flush_job *job(dev_t dev, const char *mount, uint64_t waiter)
{
	struct flush_job *j = flush_job_new(dev, FLUSH_FS, "ext4", mount);

	j->passes = 1;
	flush_job_add_waiter(j, waiter);
	return j;
}

int main(void)
{
	struct flush_pool *p;
	struct stat st;
	unsigned done = 0, waiters = 0, failed = 0;
	uint64_t seen = 0;

	stat("/tmp", &st);
	CHECK(flush_pool_new(1, "/sys/dev/block", &p) == 0, "pool with one worker");
	for (uint64_t i = 1; i <= 20; i++)
		CHECK(flush_pool_submit(p, job(st.st_dev, "/tmp", i)) == 0, "submit %llu", (unsigned long long)i);
	CHECK(flush_pool_submit(p, job(st.st_dev + 1, "/nonexistent", 100)) == 0, "submit to a missing mount");
	while (waiters < 21) {
		struct pollfd pfd = { .fd = flush_pool_fd(p), .events = POLLIN };
		struct flush_job *j;

		if (poll(&pfd, 1, 5000) <= 0)
			break;
		while ((j = flush_pool_take_done(p))) {
			done++;
			waiters += j->n_waiters;
			for (size_t i = 0; i < j->n_waiters; i++)
				seen |= 1ULL << (j->waiters[i] % 64);
			if (j->result < 0)
				failed++;
			CHECK(j->finished_usec >= j->started_usec && j->started_usec >= j->queued_usec,
			      "times in order");
			flush_job_free(j);
		}
	}
	CHECK(waiters == 21, "every waiter hears back (%u)", waiters);
	CHECK((seen & 0x1ffffe) == 0x1ffffe, "each of the 20 exactly accounted for");
	CHECK(done <= 3 + 1, "20 requests for one target cost at most 3 runs (%u jobs in all)", done);
	CHECK(failed == 1, "the missing mount failed, the rest did not (%u)", failed);

	/* A pod's expiry flush without an inode set falls back to syncfs and
	 * reports back to its pod; merged with a handover's job it becomes one. */
	{
		struct flush_job *e = flush_job_new(st.st_dev, FLUSH_FS, "tmpfs", "/tmp"), *h = job(st.st_dev, "/tmp", 50),
				 *e2 = flush_job_new(st.st_dev, FLUSH_FS, "tmpfs", "/tmp"), *j;
		size_t pods = 0, hw = 0;
		bool fell_back = false, handover_mode = false;

		e->mode = e2->mode = FLUSH_MODE_EXPIRY;
		flush_job_add_pod(e, 7);
		flush_job_add_pod(e2, 8);
		h->mode = FLUSH_MODE_HANDOVER;
		CHECK(flush_pool_submit(p, e) == 0 && flush_pool_submit(p, e2) == 0 && flush_pool_submit(p, h) == 0,
		      "two expiry jobs and a handover job for one target");
		while (pods + hw < 3) {
			struct pollfd pfd = { .fd = flush_pool_fd(p), .events = POLLIN };

			if (poll(&pfd, 1, 5000) <= 0)
				break;
			while ((j = flush_pool_take_done(p))) {
				pods += j->n_pods;
				hw += j->n_waiters;
				fell_back |= j->mode == FLUSH_MODE_EXPIRY && j->fell_back && j->result == 0;
				handover_mode |= j->n_waiters && j->n_pods && j->mode == FLUSH_MODE_HANDOVER;
				flush_job_free(j);
			}
		}
		CHECK(pods == 2 && hw == 1, "both pods and the handover hear back");
		CHECK(fell_back || handover_mode, "expiry without inodes fell back to syncfs, or rode on the handover's");
	}
	flush_pool_free(p);
	return tap_done();
}
