/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A handover's flush: its plan's targets to the pool, counted once per
 * filesystem in its record, and saved in the state dir while it runs. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "lifecycle-internal.h"
#include "wbg-base.h"

const struct wbg_plan_stats *lc_plan_stats(const struct wbg_lifecycle *lc)
{
	return &lc->plan_stats;
}

/* A target into the handover's record; false if it is there already (the
 * watch's second flush of the same filesystem). */
static bool record_target(struct wbg_handover *h, const struct wbg_plan_target *t)
{
	const char *how = t->kind == FLUSH_BDEV ? "bdev" : t->use_inodes ? "inodes" : "syncfs";
	unsigned n = h->n_targets < ELEMENTSOF(h->target) ? h->n_targets : ELEMENTSOF(h->target);

	for (unsigned i = 0; i < n; i++)
		if (h->target[i].major == major(t->dev) && h->target[i].minor == minor(t->dev) &&
		    (strcmp(h->target[i].how, "bdev") == 0) == (t->kind == FLUSH_BDEV))
			return false;
	if (n < ELEMENTSOF(h->target)) {
		h->target[n].major = major(t->dev);
		h->target[n].minor = minor(t->dev);
		snprintf(h->target[n].fstype, sizeof(h->target[0].fstype), "%s", t->fstype);
		h->target[n].how = how;
	}
	h->n_targets++;
	return true;
}

int lc_submit(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_plan *plan)
{
	int r;

	h->plan_source = plan->source;
	h->n_excluded = plan->n_excluded;
	/* a new round unless this one's jobs are still pending (a plan
	 * submitted in two parts) */
	if (h->n_pending == 0)
		h->flush_round++;
	for (size_t i = 0; i < plan->n; i++) {
		struct wbg_plan_target *t = &plan->t[i];

		log_debug("handover %" PRIu64 ": target %u:%u %s %s, %s%zu inodes, %u passes", h->id, major(t->dev),
			  minor(t->dev), t->fstype, t->mount, t->use_inodes ? "" : "syncfs, ", t->n_inodes, t->passes);
		r = lc->world.flusher->submit(lc->world.flusher_data, t, h->flush_purpose, handover_waiter(h));
		if (r == -EBUSY) {
			/* that target's queue is full (its flush hangs): failed */
			log_warning("handover %" PRIu64 ": %s is not taking flushes (too many waiting)", h->id, t->mount);
			h->n_failed++;
			continue;
		}
		if (r < 0)
			return log_oom();
		h->n_pending++;
		if (!record_target(h, t))
			continue; /* an evidence flush's again: counted once */
		if (t->kind == FLUSH_BDEV)
			h->n_bdev++;
		else if (t->use_inodes)
			h->n_inode_targets++;
		else
			h->n_fs++;
	}
	return 0;
}

/* So that a restart redoes it; a failure costs only that. */
void lc_save_pending(struct wbg_lifecycle *lc, struct wbg_handover *h, const struct wbg_plan *plan)
{
	if (!h->pending_saved && plan->n && lc->world.flusher->pending_save(lc->world.flusher_data, h, plan) >= 0)
		h->pending_saved = true;
}

/* What BPF says the cgroup dirtied (its inodes only, for evidence), else
 * every filesystem (a stall's: the stalled device's). */
void lc_flush(struct wbg_lifecycle *lc, struct wbg_handover *h, bool inodes)
{
	struct wbg_plan plan = { 0 };
	int r = lc->world.flusher->plan(lc->world.flusher_data, h->cgroup_id, NULL, inodes, &plan);

	h->flush_purpose = inodes ? FLUSH_FOR_EVIDENCE : FLUSH_FOR_HANDOVER;
	lc->plan_stats.inode_records_evicted += plan.inodes_evicted;
	if (r >= 0 && plan.n == 0) {
		plan_free(&plan);
		r = h->stall_dev ? lc->world.flusher->plan_recorded(lc->world.flusher_data, &h->stall_dev, &(bool){ false }, 1, &plan)
				 : lc->world.flusher->plan_mounts(lc->world.flusher_data, &plan);
		plan.source = h->stall_dev ? "stall device" : "mounts";
	}
	/* the inode the writer is waiting on, whatever the LRU kept */
	if (r >= 0 && inodes && h->evidence_inode.ino && plan_add_inode(&plan, &h->evidence_inode) > 0)
		lc->plan_stats.evidence_inodes_added++;
	if (r >= 0 && plan.n > 0) {
		r = lc_submit(lc, h, &plan);
		lc_save_pending(lc, h, &plan);
	}
	plan_free(&plan);
	if (r < 0) {
		log_error_errno(r, "Cannot flush %s", h->path);
		h->n_failed++;
	}
}
