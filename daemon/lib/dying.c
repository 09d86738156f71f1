/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "dying.h"
#include "macro.h"

struct dying_entry {
	uint64_t cgroup_id;
	void *cookie;
	enum dying_state state;
	uint64_t t_added, t_flush;
	uint64_t t_watch;      /* when it was last (re)armed for watching */
	bool evidence_pending; /* evidence came during a flush or too soon after one */
	bool quiet;            /* no wb_stats: no stall seen for DYING_QUIET_USEC after a flush */
	struct dying_result res;
};

void dying_init(struct dying_watch *w, const struct dying_params *p, const struct dying_ops *ops, void *userdata)
{
	*w = (struct dying_watch){ .params = *p, .ops = ops, .userdata = userdata };
}

static ssize_t find(const struct dying_watch *w, uint64_t cgroup_id)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i]->cgroup_id == cgroup_id)
			return (ssize_t)i;
	return -1;
}

bool dying_has(const struct dying_watch *w, uint64_t cgroup_id)
{
	return find(w, cgroup_id) >= 0;
}

size_t dying_count(const struct dying_watch *w)
{
	return w->n;
}

/* Removes entry i (order is not kept) and reports its end. */
static void end(struct dying_watch *w, size_t i, enum dying_end how, int verify)
{
	struct dying_entry *e = w->v[i];

	w->v[i] = w->v[--w->n];
	e->res.end = how;
	e->res.verify = verify;
	w->stats.ended[how]++;
	w->ops->disarm(w->userdata, e->cgroup_id);
	w->ops->done(w->userdata, e->cookie, &e->res);
	free(e);
}

int dying_add(struct dying_watch *w, uint64_t cgroup_id, void *cookie, uint64_t now)
{
	struct dying_entry *e;

	if (find(w, cgroup_id) >= 0)
		return -EEXIST;
	if (w->n >= w->params.max) {
		w->stats.refused_full++;
		return -ENOSPC;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct dying_entry **v = realloc(w->v, cap * sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct dying_entry){ .cgroup_id = cgroup_id, .cookie = cookie, .state = DYING_WATCHING, .t_added = now,
				    .t_watch = now };
	w->v[w->n++] = e;
	w->stats.added++;
	/* Without the arming, no evidence comes: the drain path and max_age
	 * still cover it. */
	(void)w->ops->arm(w->userdata, cgroup_id, false);
	return 0;
}

static void start_flush(struct dying_watch *w, struct dying_entry *e, uint64_t now, bool evidence)
{
	int r;

	e->state = DYING_FLUSHING;
	e->evidence_pending = false;
	e->quiet = false;
	e->t_flush = now;
	e->res.flushes++;
	w->stats.flushes++;
	r = w->ops->flush(w->userdata, e->cgroup_id, e->cookie, evidence);
	if (r < 0 && e->state == DYING_FLUSHING) {
		/* not started: it stays watched; the cleanup still runs once
		 * it drains */
		e->res.flush_failed = true;
		e->res.flushes--;
		w->stats.flush_failures++;
		e->state = DYING_WATCHING;
	}
}

int dying_evidence(struct dying_watch *w, uint64_t cgroup_id, uint64_t now)
{
	ssize_t i = find(w, cgroup_id);
	struct dying_entry *e;

	if (i < 0) {
		w->stats.evidence_ignored++;
		return -ENOENT;
	}
	e = w->v[i];
	w->stats.evidence++;
	if (e->res.evidence++ == 0)
		e->res.t_evidence = now;
	/* Evidence wins over a cleanup or a check under way: the writer is
	 * waiting now. Not over a flush still running, nor sooner than
	 * reflush_usec after the last (then the tick does it). */
	if (e->state == DYING_FLUSHING || (e->res.flushes && now - e->t_flush < w->params.reflush_usec)) {
		e->evidence_pending = true;
		return 1;
	}
	start_flush(w, e, now, true);
	return 0;
}

void dying_flush_done(struct dying_watch *w, uint64_t cgroup_id, bool ok, uint64_t now)
{
	ssize_t i = find(w, cgroup_id);
	struct dying_entry *e;

	if (i < 0 || w->v[i]->state != DYING_FLUSHING)
		return;
	e = w->v[i];
	if (!ok) {
		e->res.flush_failed = true;
		w->stats.flush_failures++;
	}
	/* the cleanup runs with the next tick's batch, which is soon; a
	 * writer still on the wb is watched for the stall itself meanwhile */
	e->state = DYING_CLEANUP;
	(void)w->ops->arm(w->userdata, e->cgroup_id, true);
	(void)now;
}

void dying_release(struct dying_watch *w, uint64_t cgroup_id)
{
	ssize_t i = find(w, cgroup_id);

	/* released, its wbs are freed with it: no dying wb is left dirty */
	if (i >= 0 && w->v[i]->state != DYING_FLUSHING)
		end(w, (size_t)i, DYING_END_DROPPED, 1);
}

static bool sorted_has(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] == x)
			return true;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A watched entry: drained, due for a flush, or still waiting. */
static void watch_step(struct dying_watch *w, struct dying_entry *e, int known, const uint64_t *dirty, size_t n,
		       uint64_t now)
{
	bool drained;

	if (known)
		drained = !sorted_has(dirty, n, e->cgroup_id);
	else if (e->res.flushes)
		drained = e->quiet = now - e->t_watch >= DYING_QUIET_USEC;
	else
		drained = now - e->t_watch >= w->params.drain_after_usec;
	if (drained)
		e->state = DYING_CLEANUP;
	else if (!e->res.flushes && now - e->t_added >= w->params.max_age_usec) {
		/* the kernel should have drained it by now: flushed, as eager
		 * mode would have */
		e->res.expired = true;
		w->stats.expired++;
		start_flush(w, e, now, false);
	}
}

uint64_t dying_tick(struct dying_watch *w, uint64_t now)
{
	_cleanup_free_ uint64_t *dirty = NULL;
	size_t n = 0, n_cleanup = 0;
	int known;

	if (w->n == 0)
		return 0;
	known = w->ops->dirty_cgroups(w->userdata, &dirty, &n) >= 0;

	/* Verified first: their cleanup ran a tick ago. */
	for (size_t i = 0; i < w->n;) {
		struct dying_entry *e = w->v[i];

		if (e->state != DYING_VERIFY) {
			i++;
			continue;
		}
		if (!known) {
			/* Nothing says whether the flush ended it: a writer
			 * still on the dying wb redirties its inodes at once,
			 * the kernel's cleanup skips the wb, and only the
			 * stall shows it. Watched for the stall until it stays
			 * quiet (or max_age). */
			if (e->res.flushes && !e->quiet && now - e->t_added < w->params.max_age_usec) {
				e->state = DYING_WATCHING;
				e->t_watch = now;
				(void)w->ops->arm(w->userdata, e->cgroup_id, true);
				i++;
				continue;
			}
			end(w, i, e->res.flushes ? DYING_END_FLUSHED : DYING_END_UNVERIFIED, -1);
			continue;
		}
		if (!sorted_has(dirty, n, e->cgroup_id)) {
			end(w, i, e->res.flushes ? DYING_END_FLUSHED : DYING_END_DRAINED, 1);
			continue;
		}
		if (e->res.flushes && now - e->t_added >= w->params.max_age_usec) {
			end(w, i, DYING_END_DIRTY, 0);
			continue;
		}
		/* dirtied again (a writer still on the dying wb): watched again */
		e->state = DYING_WATCHING;
		(void)w->ops->arm(w->userdata, e->cgroup_id, true);
		i++;
	}
	for (size_t i = 0; i < w->n; i++) {
		struct dying_entry *e = w->v[i];

		if (e->state != DYING_FLUSHING && e->evidence_pending && now - e->t_flush >= w->params.reflush_usec)
			start_flush(w, e, now, true);
		if (e->state == DYING_WATCHING)
			watch_step(w, e, known, dirty, n, now);
		if (e->state == DYING_CLEANUP)
			n_cleanup++;
	}
	if (n_cleanup) {
		/* one cycle covers every dying wb of the node */
		int r = w->ops->cleanup(w->userdata);

		if (r < 0)
			w->stats.cleanup_failures++;
		else
			w->stats.cleanups++;
		for (size_t i = 0; i < w->n; i++) {
			struct dying_entry *e = w->v[i];

			if (e->state != DYING_CLEANUP)
				continue;
			e->state = DYING_VERIFY;
			if (r >= 0) {
				e->res.cleanup_done = true;
				e->res.t_cleanup = now;
			}
		}
	}
	return w->n ? now + DYING_TICK_USEC : 0;
}

void dying_done(struct dying_watch *w)
{
	while (w->n)
		end(w, w->n - 1, DYING_END_DROPPED, -1);
	free(w->v);
	w->v = NULL;
	w->cap = 0;
}

const char *dying_end_to_string(enum dying_end e)
{
	static const char *const s[] = {
		[DYING_END_DRAINED] = "drained",       [DYING_END_FLUSHED] = "flushed", [DYING_END_UNVERIFIED] = "unverified",
		[DYING_END_DIRTY] = "dirty",           [DYING_END_DROPPED] = "dropped",
	};

	return (unsigned)e < ELEMENTSOF(s) ? s[e] : "?";
}
