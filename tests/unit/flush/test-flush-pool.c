/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pool against a real directory: jobs for one target coalesce (one
 * running, one waiting), every waiter hears back once, failures come back as
 * results. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "flush-pool.h"
#include "tap.h"

static struct flush_job *job(dev_t dev, const char *mount, uint64_t waiter)
{
	struct flush_job *j = flush_job_new(dev, FLUSH_FS, "ext4", mount);

	j->passes = 1;
	flush_job_add_waiter(j, waiter);
	return j;
}

/* A fake flush: jobs for dev 1 hang until released, as on a filesystem
 * whose server is gone; the rest return at once. */
static pthread_mutex_t hang_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cond = PTHREAD_COND_INITIALIZER;
static bool released;

static void fake_run(struct flush_job *j, void *userdata)
{
	j->started_usec = j->queued_usec;
	if (j->dev == 1) {
		pthread_mutex_lock(&hang_lock);
		while (!released)
			pthread_cond_wait(&hang_cond, &hang_lock);
		pthread_mutex_unlock(&hang_lock);
	}
	j->result = 0;
	j->finished_usec = j->started_usec + 1;
}

/* Jobs back from the pool within ms; returns how many. */
static unsigned collect(struct flush_pool *p, int ms, dev_t *last_dev)
{
	struct pollfd pfd = { .fd = flush_pool_fd(p), .events = POLLIN };
	struct flush_job *j;
	unsigned n = 0;

	while (poll(&pfd, 1, ms) > 0) {
		while ((j = flush_pool_take_done(p))) {
			n++;
			if (last_dev)
				*last_dev = j->dev;
			flush_job_free(j);
		}
		ms = 50;
	}
	return n;
}

static int target_of_5(dev_t dev, enum flush_kind kind, const struct flush_target_stats *st, void *userdata)
{
	if (dev == 5)
		*(struct flush_target_stats *)userdata = *st;
	return 0;
}

/* The budget: one filesystem flushed at most once per interval, requests
 * meanwhile merged; another filesystem is not held back by it. */
static void budget(void)
{
	struct flush_pool *p;
	struct flush_pool_stats st;
	struct flush_target_stats st5 = { 0 };
	dev_t last = 0;

	CHECK(flush_pool_new(2, "/sys/dev/block", &p) == 0, "pool for the budget");
	flush_pool_set_runner(p, fake_run, NULL);
	flush_pool_set_interval(p, 400 * 1000);
	flush_pool_submit(p, job(5, "/e", 1));
	CHECK(collect(p, 300, NULL) == 1, "the first flush of a filesystem starts at once");
	flush_pool_submit(p, job(5, "/e", 2));
	flush_pool_submit(p, job(5, "/e", 3));
	flush_pool_submit(p, job(6, "/f", 4));
	CHECK(collect(p, 100, &last) == 1 && last == 6, "within the interval: another filesystem flushes");
	flush_pool_stats(p, &st);
	CHECK(st.jobs_started == 2, "the same filesystem waits (2 started)");
	CHECK(collect(p, 600, &last) == 1 && last == 5, "after the interval: the two requests as one flush");
	flush_pool_stats(p, &st);
	CHECK(st.budget_waits == 1 && st.budget_wait_usec > 100 * 1000 && st.jobs_started == 3,
	      "the wait is counted (%llu, %llu us)", (unsigned long long)st.budget_waits,
	      (unsigned long long)st.budget_wait_usec);
	CHECK(flush_pool_foreach_target(p, target_of_5, &st5) == 0 && st5.jobs == 2 && st5.budget_waits == 1,
	      "per filesystem: 2 jobs on dev 5, 1 held back");
	flush_pool_free(p);
}

/* A runner where opening by handle is refused (the DaemonSet without
 * CAP_DAC_READ_SEARCH, RuntimeDefault seccomp): per-inode jobs fall back to
 * one syncfs, as run_job does. */
static void refusing_run(struct flush_job *j, void *userdata)
{
	j->started_usec = j->queued_usec;
	if (j->use_inodes) {
		j->fell_back = j->handles_refused = true;
		j->stats.syncfs_calls++;
	}
	j->result = 0;
	j->finished_usec = j->started_usec + 1;
}

/* Handles work, but one job came with no inode set: its syncfs is a
 * fallback, and says nothing about handles. */
static void noset_run(struct flush_job *j, void *userdata)
{
	j->started_usec = j->queued_usec;
	if (!j->use_inodes) {
		j->fell_back = true;
		j->stats.syncfs_calls++;
	}
	j->result = 0;
	j->finished_usec = j->started_usec + 1;
}

static struct flush_job *evidence_job(dev_t dev, uint64_t waiter)
{
	struct flush_job *j = job(dev, "/e", waiter);
	struct wbg_inode_key k = { .ino = waiter, .dev = (uint32_t)dev };

	j->purpose = FLUSH_FOR_EVIDENCE;
	j->use_inodes = true;
	flush_job_add_inodes(j, &k, 1);
	return j;
}

/* 30 evidence jobs for one filesystem over 300 ms; returns the jobs started. */
static uint64_t evidence_burst(bool probe_ok, void (*run)(struct flush_job *j, void *userdata), uint64_t *ret_fallbacks)
{
	struct flush_pool *p;
	struct flush_pool_stats st;

	if (flush_pool_new(2, "/sys/dev/block", &p) < 0)
		return 0;
	flush_pool_set_runner(p, run, NULL);
	flush_pool_set_interval(p, 1000 * 1000);
	flush_pool_set_handles(p, probe_ok);
	if (run == noset_run) {
		/* an expiry job without an inode set goes first */
		struct flush_job *e = job(9, "/e", 99);

		e->purpose = FLUSH_FOR_EXPIRY;
		flush_pool_submit(p, e);
		usleep(20 * 1000);
		(void)collect(p, 0, NULL);
	}
	for (uint64_t i = 1; i <= 30; i++) {
		flush_pool_submit(p, evidence_job(9, i));
		usleep(10 * 1000);
		(void)collect(p, 0, NULL);
	}
	flush_pool_stats(p, &st);
	*ret_fallbacks = st.handle_fallbacks;
	flush_pool_free(p);
	return st.jobs_started;
}

static void refused_handles(void)
{
	uint64_t started, fallbacks;

	started = evidence_burst(true, fake_run, &fallbacks);
	CHECK(started >= 10, "handles work: a cgroup's own-inode jobs are not held by the budget (%llu of 30 started)",
	      (unsigned long long)started);
	started = evidence_burst(true, noset_run, &fallbacks);
	CHECK(started >= 10 && fallbacks == 0,
	      "a job that fell back for want of an inode set is no sign of refused handles (%llu started)",
	      (unsigned long long)started);
	started = evidence_burst(false, refusing_run, &fallbacks);
	CHECK(started <= 2, "the probe said handles are refused: their syncfs fallbacks are budgeted (%llu started)",
	      (unsigned long long)started);
	started = evidence_burst(true, refusing_run, &fallbacks);
	CHECK(started <= 2 && fallbacks >= 1,
	      "refused at run time: the first falls back, the rest wait for the budget (%llu started, %llu fallbacks)",
	      (unsigned long long)started, (unsigned long long)fallbacks);
}

/* An exit job writes 64 MiB to its device. */
static void exit_run(struct flush_job *j, void *userdata)
{
	j->result = 0;
	j->device_bytes = j->purpose == FLUSH_FOR_EXIT ? 64ULL << 20 : 0;
}

static struct flush_job *exit_job(dev_t dev, uint64_t waiter)
{
	struct flush_job *j = evidence_job(dev, waiter);

	j->purpose = FLUSH_FOR_EXIT;
	return j;
}

/* The exit recipe's budget is bytes a second per device: after 64 MiB at
 * 64 MiB/s, the next exit job there waits a second; other devices and
 * other modes do not. */
static void exit_budget(void)
{
	struct flush_pool *p;
	struct flush_pool_stats st;
	unsigned done;

	if (flush_pool_new(2, "/sys/dev/block", &p) < 0)
		return;
	flush_pool_set_runner(p, exit_run, NULL);
	flush_pool_set_interval(p, 0);
	flush_pool_set_exit_rate(p, 64ULL << 20);
	flush_pool_submit(p, exit_job(5, 1));
	done = collect(p, 1000, NULL);
	flush_pool_submit(p, exit_job(5, 2));
	flush_pool_submit(p, exit_job(6, 3));
	flush_pool_submit(p, evidence_job(5, 4));
	done += collect(p, 300, NULL);
	flush_pool_stats(p, &st);
	CHECK(done == 2 && st.jobs_started == 2,
	      "after an exit job wrote 64 MiB at 64 MiB/s, the next on its device waits (another device's does not; "
	      "%u done)", done);
	done += collect(p, 2000, NULL);
	flush_pool_stats(p, &st);
	CHECK(done == 3 && st.budget_waits == 1,
	      "it starts within the second, merged with the evidence job waiting for that device; counted as held");
	flush_pool_set_exit_rate(p, 0);
	flush_pool_submit(p, exit_job(7, 5));
	done += collect(p, 1000, NULL);
	flush_pool_submit(p, exit_job(7, 6));
	done += collect(p, 300, NULL);
	CHECK(done == 5, "exit_bytes_per_sec = 0: no wait");
	flush_pool_free(p);
}

/* A merged job does the most its parts asked. */
static void merge_modes(void)
{
	static const struct {
		enum flush_purpose into, j, want;
	} cases[] = {
		{ FLUSH_FOR_EXPIRY, FLUSH_FOR_EXIT, FLUSH_FOR_EXIT },
		{ FLUSH_FOR_EXIT, FLUSH_FOR_EVIDENCE, FLUSH_FOR_EXIT },
		{ FLUSH_FOR_EVIDENCE, FLUSH_FOR_EXPIRY, FLUSH_FOR_EVIDENCE },
		{ FLUSH_FOR_EXIT, FLUSH_FOR_HANDOVER, FLUSH_FOR_HANDOVER },
		{ FLUSH_FOR_HANDOVER, FLUSH_FOR_EXIT, FLUSH_FOR_HANDOVER },
	};
	unsigned ok = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct flush_job *a = evidence_job(5, 1), *b = evidence_job(5, 2);
		bool capped = true;

		a->purpose = cases[i].into;
		b->purpose = cases[i].j;
		ok += flush_job_merge(a, b, &capped) == 0 && a->purpose == cases[i].want && !capped && a->n_waiters == 2;
		flush_job_free(a);
		flush_job_free(b);
	}
	CHECK(ok == 5, "merged modes: exit covers evidence and expiry, a handover covers exit (%u of 5)", ok);
}

static void stuck_and_bounds(void)
{
	struct flush_pool *p;
	struct flush_pool_stats st;
	struct flush_job *j;
	struct wbg_inode_key k = { 0 };
	dev_t last = 0;
	int r = 0;

	/* Two workers, two filesystems that hang: without reaping, a third
	 * filesystem would wait behind them for good. */
	CHECK(flush_pool_new(2, "/sys/dev/block", &p) == 0, "pool with two workers");
	flush_pool_set_runner(p, fake_run, NULL);
	flush_pool_submit(p, flush_job_new(1, FLUSH_FS, "nfs", "/a"));
	flush_pool_submit(p, flush_job_new(1, FLUSH_BDEV, "", "/dev/x"));
	usleep(100 * 1000);
	flush_pool_submit(p, flush_job_new(3, FLUSH_FS, "ext4", "/c"));
	CHECK(collect(p, 300, NULL) == 0, "both workers hang: the third filesystem waits");
	CHECK(flush_pool_reap_stuck(p, 1000) == 2, "past the timeout both are marked stuck");
	CHECK(collect(p, 2000, &last) == 1 && last == 3, "new threads take their places: the third flushes");
	flush_pool_stats(p, &st);
	CHECK(st.stuck == 2 && st.stuck_total == 2, "stuck counted (%u now, %llu in all)", st.stuck,
	      (unsigned long long)st.stuck_total);
	CHECK(flush_pool_reap_stuck(p, 1000) == 0, "a stuck job is reaped once");

	/* A hung target's waiting jobs: bounded waiters and inodes; a full
	 * one has the next behind it (a restart's thousands of records on one
	 * filesystem), up to FLUSH_SLOT_OVERFLOW_MAX. */
	for (unsigned i = 0; i < FLUSH_JOB_WAITERS_MAX * (1 + FLUSH_SLOT_OVERFLOW_MAX) + 1 && r == 0; i++) {
		j = flush_job_new(1, FLUSH_FS, "nfs", "/a");
		flush_job_add_waiter(j, i + 1);
		j->use_inodes = true;
		for (unsigned n = 0; n < 20; n++)
			flush_job_add_inodes(j, &k, 1);
		r = flush_pool_submit(p, j);
		if (r < 0)
			flush_job_free(j); /* refused: still the caller's */
	}
	flush_pool_stats(p, &st);
	CHECK(r == -EBUSY && st.refused_busy == 1 && st.overflows == FLUSH_SLOT_OVERFLOW_MAX,
	      "%d waiters in %d jobs queued (%llu behind the first), the next refused with -EBUSY, counted",
	      FLUSH_JOB_WAITERS_MAX * (1 + FLUSH_SLOT_OVERFLOW_MAX), 1 + FLUSH_SLOT_OVERFLOW_MAX,
	      (unsigned long long)st.overflows);
	CHECK(st.inodes_capped == 1 + FLUSH_SLOT_OVERFLOW_MAX,
	      "past %d inodes each merged job became a syncfs, counted (%llu)", FLUSH_JOB_INODES_MAX,
	      (unsigned long long)st.inodes_capped);

	pthread_mutex_lock(&hang_lock);
	released = true;
	pthread_cond_broadcast(&hang_cond);
	pthread_mutex_unlock(&hang_lock);
	CHECK(collect(p, 5000, NULL) == 3 + FLUSH_SLOT_OVERFLOW_MAX,
	      "the hung ones return, and the waiting jobs run, one after another");
	flush_pool_stats(p, &st);
	CHECK(st.stuck == 0 && st.busy == 0, "back from the hang: no thread counted stuck");
	flush_pool_free(p);
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

		e->purpose = e2->purpose = FLUSH_FOR_EXPIRY;
		flush_job_add_pod(e, 7);
		flush_job_add_pod(e2, 8);
		h->purpose = FLUSH_FOR_HANDOVER;
		CHECK(flush_pool_submit(p, e) == 0 && flush_pool_submit(p, e2) == 0 && flush_pool_submit(p, h) == 0,
		      "two expiry jobs and a handover job for one target");
		while (pods + hw < 3) {
			struct pollfd pfd = { .fd = flush_pool_fd(p), .events = POLLIN };

			if (poll(&pfd, 1, 5000) <= 0)
				break;
			while ((j = flush_pool_take_done(p))) {
				pods += j->n_pods;
				hw += j->n_waiters;
				fell_back |= j->purpose == FLUSH_FOR_EXPIRY && j->fell_back && j->result == 0;
				handover_mode |= j->n_waiters && j->n_pods && j->purpose == FLUSH_FOR_HANDOVER;
				flush_job_free(j);
			}
		}
		CHECK(pods == 2 && hw == 1, "both pods and the handover hear back");
		CHECK(fell_back || handover_mode, "expiry without inodes fell back to syncfs, or rode on the handover's");
	}
	flush_pool_free(p);
	stuck_and_bounds();
	budget();
	refused_handles();
	exit_budget();
	merge_modes();
	return tap_done();
}
