/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handovers in progress: by id, how many per cgroup (a stall's
 * "covered?" in O(log n)), a ring of the cgroups whose handover ended
 * lately (the rmdir tracepoint's duplicates of inotify's news), and the
 * cgroups whose going-away is recorded already (settled). */
#include <search.h>
#include <stdlib.h>

#include "lifecycle-internal.h"
#include "wbg-base.h"

struct active_cgroup {
	uint64_t cgroup_id; /* first: cmp_leading_u64 */
	unsigned n;
};

/* The per-cgroup count of handovers in progress; an entry goes with its
 * last one. (No memory for a new entry: that cgroup's stall reports are
 * then taken as uncovered, and the one-per-cgroup bound in BPF still
 * holds.) */
static void active_cgroup_count(struct wbg_lifecycle *lc, uint64_t cgroup_id, int delta)
{
	struct active_cgroup key = { .cgroup_id = cgroup_id }, **f = tfind(&key, &lc->act.per_cgroup, cmp_leading_u64), *e;

	if (!f && delta > 0) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->cgroup_id = cgroup_id;
		f = tsearch(e, &lc->act.per_cgroup, cmp_leading_u64);
		if (!f || *f != e) {
			free(e);
			return;
		}
	}
	if (!f)
		return;
	e = *f;
	if (delta > 0)
		e->n++;
	else if (e->n && --e->n == 0) {
		tdelete(e, &lc->act.per_cgroup, cmp_leading_u64);
		free(e);
	}
}

bool lifecycle_cgroup_active(const struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	struct active_cgroup key = { .cgroup_id = cgroup_id };

	return tfind(&key, &lc->act.per_cgroup, cmp_leading_u64) != NULL;
}

bool handover_forget_dirtied(enum wbg_forget_moment when, struct wbg_forget_facts f)
{
	switch (when) {
	case WBG_FORGET_REMOVED:
		/* a handover in progress (a flush that outlives the rmdir)
		 * still needs them on evidence */
		return !f.active;
	case WBG_FORGET_ENDED:
		/* a cgroup still there may dirty more; a watched one's went
		 * at its unwatching; another handover of it may need them */
		return f.removed && !f.was_watched && !f.active;
	case WBG_FORGET_UNWATCHED:
		return true; /* the watch was what needed them */
	}
	return false;
}

void lc_forget_dirtied(struct wbg_lifecycle *lc, uint64_t cgroup_id, enum wbg_forget_moment when, bool removed,
		       bool was_watched)
{
	struct wbg_forget_facts f = { .active = lifecycle_cgroup_active(lc, cgroup_id),
				      .removed = removed,
				      .was_watched = was_watched };

	if (handover_forget_dirtied(when, f))
		lc->world.kernel->forget(lc->world.kernel_data, cgroup_id);
}

enum wbg_merge handover_merge_report(enum wbg_trigger trigger, struct wbg_report_facts f)
{
	switch (trigger) {
	case WBG_TRIGGER_RMDIR_BPF:
		/* the tracepoint sees every rmdir: a cgroup inotify reports, or
		 * one a handover covered (its removal a moment ago), is a
		 * duplicate */
		return f.tracked || f.recent || !f.in_scope ? WBG_MERGE_DROP : WBG_MERGE_START;
	case WBG_TRIGGER_STOP_JOB:
		/* systemd's warning before the cgroup empties: a live one's
		 * first report only (emptied, inotify's populated 0 came first) */
		return f.in_scope && f.populated && !f.removed && !f.handover ? WBG_MERGE_START : WBG_MERGE_DROP;
	case WBG_TRIGGER_POPULATED_0:
	case WBG_TRIGGER_API:
		return f.handover ? WBG_MERGE_MOVE_ON : WBG_MERGE_START;
	case WBG_TRIGGER_REMOVED:
	case WBG_TRIGGER_RESCAN:
		/* one record per going-away: a handover that ended at populated
		 * 0 (clean, disabled, children) covers the removal too */
		return f.handover ? WBG_MERGE_MOVE_ON : f.settled ? WBG_MERGE_SETTLED : WBG_MERGE_START;
	default:
		/* recovery and stalls come by entry points of their own */
		return WBG_MERGE_DROP;
	}
}

/* A settled cgroup: its id, in a tree by id. */
struct settled_cgroup {
	uint64_t cgroup_id; /* first: cmp_leading_u64 */
};

void lc_settle(struct wbg_lifecycle *lc, uint64_t cgroup_id, bool settled)
{
	struct settled_cgroup key = { .cgroup_id = cgroup_id }, **f = tfind(&key, &lc->act.settled, cmp_leading_u64), *e;

	if (!settled && f) {
		e = *f;
		tdelete(e, &lc->act.settled, cmp_leading_u64);
		free(e);
	} else if (settled && !f) {
		/* no memory: its removal is a second record, which is all */
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->cgroup_id = cgroup_id;
		if (!tsearch(e, &lc->act.settled, cmp_leading_u64))
			free(e);
	}
}

bool lc_settled(const struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	struct settled_cgroup key = { .cgroup_id = cgroup_id };

	return tfind(&key, &lc->act.settled, cmp_leading_u64) != NULL;
}

struct wbg_handover *lc_find(const struct wbg_lifecycle *lc, uint64_t id)
{
	struct wbg_handover key = { .id = id }, **f = tfind(&key, &lc->act.tree, cmp_leading_u64);

	return f ? *f : NULL;
}

const struct wbg_handover *lifecycle_find(const struct wbg_lifecycle *lc, uint64_t id)
{
	return lc_find(lc, id);
}

void lifecycle_open_ids(struct wbg_lifecycle *lc, const char *dir, uint64_t floor)
{
	ids_open(&lc->ids, dir, floor);
}

struct wbg_handover *lc_start(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger)
{
	struct wbg_handover *h = handover_new(ids_next(&lc->ids), cgroup_id, path, trigger, lc_now(lc));

	if (!h || !tsearch(h, &lc->act.tree, cmp_leading_u64)) {
		handover_free(h);
		log_oom();
		return NULL;
	}
	lc->act.n++;
	active_cgroup_count(lc, cgroup_id, +1);
	return h;
}

bool lc_finish(struct wbg_lifecycle *lc, struct wbg_handover *h)
{
	if (!tdelete(h, &lc->act.tree, cmp_leading_u64))
		return false;
	lc->act.n--;
	active_cgroup_count(lc, h->cgroup_id, -1);
	lc->act.ended_ids[lc->act.ended_next++ % ELEMENTSOF(lc->act.ended_ids)] = h->cgroup_id;
	return true;
}

bool lifecycle_recently_started(const struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	if (lifecycle_cgroup_active(lc, cgroup_id))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(lc->act.ended_ids); i++)
		if (lc->act.ended_ids[i] == cgroup_id)
			return true;
	return false;
}

size_t lifecycle_n_active(const struct wbg_lifecycle *lc)
{
	return lc->act.n;
}

void lc_active_walk(const struct wbg_lifecycle *lc, void (*fn)(const void *node, VISIT which, void *data), void *data)
{
	twalk_r(lc->act.tree, fn, data);
}

void lc_active_clear(struct wbg_lifecycle *lc)
{
	tdestroy(lc->act.per_cgroup, free); /* (empty once every handover ended) */
	lc->act.per_cgroup = NULL;
	tdestroy(lc->act.settled, free);
	lc->act.settled = NULL;
}
