/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The on-evidence lifecycle (dying.h) against a pretend kernel: which
 * cgroups have a dirty wb, what is armed, what was flushed and cleaned. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dying.h"
#include "tap.h"

#define S 1000000ULL

struct world {
	uint64_t dirty[8];
	size_t n_dirty;
	bool no_wbstats;
	bool armed[64], stall_only[64];
	unsigned flushes[64], cleanups, ended;
	int flush_result;
	bool last_flush_evidence;
	bool flush_sync; /* the flush finishes inside the call */
	struct dying_watch *w;
	struct dying_result last;
	uint64_t last_cookie;
};

static int w_arm(void *u, uint64_t id, bool stall_only)
{
	((struct world *)u)->armed[id] = true;
	((struct world *)u)->stall_only[id] = stall_only;
	return 0;
}

static void w_disarm(void *u, uint64_t id)
{
	((struct world *)u)->armed[id] = false;
}

static int w_flush(void *u, uint64_t id, void *cookie, bool evidence)
{
	struct world *x = u;

	x->last_flush_evidence = evidence;
	if (x->flush_result < 0)
		return x->flush_result;
	x->flushes[id]++;
	if (x->flush_sync)
		dying_flush_done(x->w, id, true, 0);
	return 0;
}

static int w_cleanup(void *u)
{
	((struct world *)u)->cleanups++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int w_dirty(void *u, uint64_t **ret, size_t *ret_n)
{
	struct world *x = u;

	if (x->no_wbstats)
		return -ENOENT;
	*ret = malloc(sizeof(uint64_t) * (x->n_dirty + 1));
	memcpy(*ret, x->dirty, sizeof(uint64_t) * x->n_dirty);
	qsort(*ret, x->n_dirty, sizeof(uint64_t), cmp);
	*ret_n = x->n_dirty;
	return 0;
}

static void w_done(void *u, void *cookie, const struct dying_result *res)
{
	struct world *x = u;

	x->ended++;
	x->last = *res;
	x->last_cookie = (uint64_t)(uintptr_t)cookie;
}

static const struct dying_ops ops = { w_arm, w_disarm, w_flush, w_cleanup, w_dirty, w_done };
static const struct dying_params params = {
	.max = 3, .drain_after_usec = 40 * S, .max_age_usec = 300 * S, .reflush_usec = 2 * S
};

static void setup(struct world *x, struct dying_watch *w)
{
	memset(x, 0, sizeof(*x));
	x->w = w;
	dying_init(w, &params, &ops, x);
}

int main(void)
{
	struct dying_watch w;
	struct world x;

	/* Drains by itself: no flush, one cleanup, then verified clean. */
	setup(&x, &w);
	x.dirty[x.n_dirty++] = 5;
	CHECK(dying_add(&w, 5, (void *)50, 0) == 0 && x.armed[5] && !x.stall_only[5],
	      "a removal with dirty data is watched, armed for either sign");
	CHECK(dying_add(&w, 5, NULL, 0) == -EEXIST, "once");
	CHECK(dying_tick(&w, 1 * S) == 1 * S + DYING_TICK_USEC && x.cleanups == 0 && x.flushes[5] == 0,
	      "still dirty: nothing done, no I/O");
	x.n_dirty = 0;
	dying_tick(&w, 30 * S);
	CHECK(x.cleanups == 1 && x.flushes[5] == 0 && x.ended == 0, "drained: the cleanup runs, no flush");
	CHECK(dying_tick(&w, 31 * S) == 0 && x.ended == 1 && x.last.end == DYING_END_DRAINED && x.last_cookie == 50,
	      "verified clean: ends drained, with its cookie");
	CHECK(x.last.cleanup_done && x.last.t_cleanup == 30 * S && x.last.flushes == 0, "its result says so");
	CHECK(!x.armed[5] && dying_count(&w) == 0, "disarmed and gone");
	dying_done(&w);

	/* Evidence: flushed at once, cleaned on the next tick. */
	setup(&x, &w);
	x.dirty[x.n_dirty++] = 7;
	dying_add(&w, 7, NULL, 0);
	CHECK(dying_evidence(&w, 7, 3 * S) == 0 && x.flushes[7] == 1 && x.last_flush_evidence,
	      "evidence: its flush starts at once");
	CHECK(dying_evidence(&w, 7, 3 * S + 10) == 1 && x.flushes[7] == 1, "more evidence while it runs: no second flush");
	CHECK(dying_evidence(&w, 9, 3 * S) == -ENOENT && w.stats.evidence_ignored == 1,
	      "evidence for a cgroup not watched: counted, ignored");
	dying_tick(&w, 3 * S + 20);
	CHECK(x.cleanups == 0, "no cleanup while the flush runs");
	x.n_dirty = 0;
	dying_flush_done(&w, 7, true, 3 * S + 500);
	dying_tick(&w, 3 * S + 600);
	CHECK(x.cleanups == 1, "flushed: the cleanup runs on the next tick");
	dying_tick(&w, 4 * S + 600);
	CHECK(x.ended == 1 && x.last.end == DYING_END_FLUSHED && x.last.evidence == 2 && x.last.t_evidence == 3 * S,
	      "ends flushed, with its evidence");
	dying_done(&w);

	/* A writer keeps the dying wb dirty: re-armed, flushed again only
	 * after reflush_usec, and given up at max_age. */
	setup(&x, &w);
	x.flush_sync = true;
	x.dirty[x.n_dirty++] = 8;
	dying_add(&w, 8, NULL, 0);
	x.armed[8] = false; /* BPF disarms itself when it fires */
	dying_evidence(&w, 8, 1 * S);
	CHECK(x.armed[8] && x.stall_only[8], "its flush done: re-armed at once, for the stall itself only");
	dying_tick(&w, 1 * S + 1);
	CHECK(x.cleanups == 1 && x.flushes[8] == 1, "flushed and cleaned");
	dying_tick(&w, 2 * S);
	CHECK(x.ended == 0 && x.armed[8] && x.stall_only[8],
	      "still dirty after: watched again, re-armed for the stall itself only");
	CHECK(dying_evidence(&w, 8, 2 * S + 1) == 1 && x.flushes[8] == 1,
	      "evidence within reflush_usec of the flush: deferred (1)");
	dying_tick(&w, 2 * S + 2);
	CHECK(x.flushes[8] == 1, "still within it at the next tick");
	dying_tick(&w, 3 * S + 1);
	CHECK(x.flushes[8] == 2, "once it is over, the deferred evidence flushes");
	CHECK(dying_evidence(&w, 8, 5 * S + 2) == 0 && x.flushes[8] == 3,
	      "evidence during the cleanup and check, past reflush_usec: flushed at once");
	dying_tick(&w, 301 * S);
	dying_tick(&w, 302 * S);
	CHECK(x.ended == 1 && x.last.end == DYING_END_DIRTY, "dirty after a flush at max_age: given up, not watched forever");
	dying_done(&w);

	/* Nobody writes, the kernel never drains it: flushed at max_age. */
	setup(&x, &w);
	x.dirty[x.n_dirty++] = 3;
	dying_add(&w, 3, NULL, 0);
	dying_tick(&w, 299 * S);
	CHECK(x.flushes[3] == 0, "before max_age: no flush");
	dying_tick(&w, 300 * S);
	CHECK(x.flushes[3] == 1 && w.stats.expired == 1 && !x.last_flush_evidence,
	      "at max_age: all of it flushed (counted as expired)");
	dying_done(&w);

	/* No wb_stats (before 6.10): drained after drain_after, unverified. */
	setup(&x, &w);
	x.no_wbstats = true;
	dying_add(&w, 4, NULL, 0);
	dying_tick(&w, 39 * S);
	CHECK(x.cleanups == 0, "no wb_stats: nothing before drain_after");
	dying_tick(&w, 40 * S);
	dying_tick(&w, 41 * S);
	CHECK(x.cleanups == 1 && x.ended == 1 && x.last.end == DYING_END_UNVERIFIED, "after it: cleaned, unverified");
	dying_done(&w);

	/* No wb_stats, flushed on evidence: nothing says the flush ended the
	 * stall (a writer on the inodes redirties them at once, as on Debian's
	 * 6.1), so it is watched for the stall again, flushed again when it
	 * comes, and ends only after DYING_QUIET_USEC without it. */
	setup(&x, &w);
	x.no_wbstats = true;
	x.flush_sync = true;
	dying_add(&w, 5, NULL, 0);
	dying_evidence(&w, 5, 1 * S);
	dying_tick(&w, 2 * S); /* the cleanup */
	dying_tick(&w, 3 * S); /* the check: not known */
	CHECK(x.ended == 0 && dying_has(&w, 5) && x.armed[5] && x.stall_only[5],
	      "no wb_stats, flushed: still watched, armed for the stall");
	dying_evidence(&w, 5, 4 * S);
	CHECK(x.flushes[5] == 2, "the stall again: flushed again");
	dying_tick(&w, 5 * S);
	dying_tick(&w, 6 * S);
	dying_tick(&w, 6 * S + DYING_QUIET_USEC - 1);
	CHECK(x.ended == 0, "watched until it has been quiet for DYING_QUIET_USEC");
	dying_tick(&w, 6 * S + DYING_QUIET_USEC);
	dying_tick(&w, 7 * S + DYING_QUIET_USEC);
	dying_tick(&w, 8 * S + DYING_QUIET_USEC);
	CHECK(x.ended == 1 && x.last.end == DYING_END_FLUSHED && x.last.verify == -1 && x.last.flushes == 2 &&
		      x.last.evidence == 2,
	      "then: ended flushed, unverified, two flushes for two stalls");
	dying_done(&w);

	/* Bounds, batching, release, failures. */
	setup(&x, &w);
	x.dirty[x.n_dirty++] = 1, x.dirty[x.n_dirty++] = 2, x.dirty[x.n_dirty++] = 3;
	CHECK(dying_add(&w, 1, NULL, 0) == 0 && dying_add(&w, 2, NULL, 0) == 0 && dying_add(&w, 3, NULL, 0) == 0,
	      "three watched");
	CHECK(dying_add(&w, 4, NULL, 0) == -ENOSPC && w.stats.refused_full == 1, "a fourth: refused, counted");
	x.n_dirty = 0;
	dying_tick(&w, 1 * S);
	CHECK(x.cleanups == 1, "three drained at once: one cleanup for all");
	dying_release(&w, 2);
	CHECK(x.ended == 1 && x.last.end == DYING_END_DROPPED && x.last.verify == 1 && !dying_has(&w, 2),
	      "a released cgroup ends dropped, its wbs gone with it: clean");
	x.flush_result = -EIO;
	dying_done(&w);
	CHECK(x.ended == 3 && dying_count(&w) == 0, "stopping ends the rest");

	setup(&x, &w);
	x.flush_result = -EIO;
	x.dirty[x.n_dirty++] = 6;
	dying_add(&w, 6, NULL, 0);
	dying_evidence(&w, 6, 1 * S);
	CHECK(w.stats.flush_failures == 1 && dying_has(&w, 6), "a flush that cannot start: counted, still watched");
	x.n_dirty = 0;
	dying_tick(&w, 2 * S);
	dying_tick(&w, 3 * S);
	CHECK(x.ended == 1 && x.last.flush_failed && x.last.end == DYING_END_DRAINED,
	      "it ends drained when the wb is clean, the failure kept");
	dying_done(&w);
	CHECK(strcmp(dying_end_to_string(DYING_END_DRAINED), "drained") == 0, "names");

	return tap_done();
}
