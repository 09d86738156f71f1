/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a cgroup's news means for its handover: whether anything needs
 * writing (clean, disabled, a parent whose children cover it, dirty pages
 * that are not its own, a BPF set maybe evicted), as the event that starts
 * its phases (handover-phase.h) or moves it on. Decisions only: the engine
 * (lifecycle.c) steps. */
#include <errno.h>
#include <search.h>
#include <string.h>

#include "lifecycle-internal.h"
#include "wbg-base.h"

struct path_prefix {
	const char *path;
	size_t len;
	bool found;
};

const struct wbg_event_stats *lc_event_stats(const struct wbg_lifecycle *lc)
{
	return &lc->event_stats;
}

static bool below(const char *p, const struct path_prefix *pre)
{
	return strncmp(p, pre->path, pre->len) == 0 && p[pre->len] == '/';
}

static void match_descendant(const void *nodep, VISIT which, void *closure)
{
	const struct wbg_handover *h = *(struct wbg_handover *const *)nodep;
	struct path_prefix *p = closure;

	if ((which == postorder || which == leaf) && below(h->path, p))
		p->found = true;
}

/* Whether a cgroup below path has a handover in progress or among the
 * recent ones, or is still tracked (its removal, in the same batch of
 * events, not read yet: it will have its handover). */
static bool descendants_handed_over(const struct wbg_lifecycle *lc, const char *path)
{
	struct path_prefix p = { .path = path, .len = strlen(path) };

	if (!*path)
		return false;
	/* the tracked ones by their parent's count, O(the path); the active
	 * handovers are bounded by the watch table and the flush timeout */
	p.found = registry_has_children(lc->reg, path);
	if (!p.found)
		lc_active_walk(lc, match_descendant, &p);
	for (size_t i = 0; i < WBG_RECENT_MAX && !p.found; i++)
		p.found = lc_recent_path(lc, i) && below(lc_recent_path(lc, i), &p);
	return p.found;
}

/* A handover that ends before any flush. One that ends while the cgroup
 * still exists covers its removal too (settled). */
static struct wbg_fact end_early(struct wbg_lifecycle *lc, struct wbg_cgroup *c, struct wbg_handover *h,
				 enum wbg_cause cause)
{
	handover_conclude(h, cause);
	c->handover = NULL;
	lc_settle(lc, c->id, !h->t_removed && h->trigger != WBG_TRIGGER_API);
	return fact(WBG_EVENT_NOTHING, 0);
}

/* The exit recipe: its own inodes written and waited for as the cgroup
 * empties; a filesystem whose inode set is incomplete gets a syncfs (the
 * counted fallback). Its removal is then watched. */
static void exit_recipe(struct wbg_lifecycle *lc, struct wbg_handover *h, const struct wbg_plan *plan)
{
	h->flush_purpose = FLUSH_FOR_EXIT;
	lc->event_stats.exit_flushes++;
	for (size_t i = 0; i < plan->n; i++)
		if (plan->t[i].kind == FLUSH_FS) {
			if (plan->t[i].use_inodes)
				lc->event_stats.exit_targets_inodes++;
			else
				lc->event_stats.exit_targets_syncfs++;
		}
}

struct wbg_fact lc_event_move_on(struct wbg_lifecycle *lc, struct wbg_cgroup *c, struct wbg_handover *h,
				enum wbg_trigger trigger, struct wbg_plan *plan)
{
	if (trigger == WBG_TRIGGER_POPULATED_0 && h->trigger == WBG_TRIGGER_STOP_JOB && !h->replanned) {
		/* The stop job's flush ran while the processes were still
		 * writing: once more for what they wrote since (on-evidence:
		 * nothing until the removal). */
		h->replanned = true;
		if (h->phase == WBG_PHASE_DEFERRED ||
		    lc->world.flusher->plan(lc->world.flusher_data, c->id, c, h->route == WBG_ROUTE_EXIT, plan) >= 0)
			return fact(WBG_EVENT_EMPTIED, 0);
		return LC_NO_FACT;
	}
	if (trigger == WBG_TRIGGER_REMOVED || trigger == WBG_TRIGGER_RESCAN) {
		h->t_removed = lc_now(lc);
		c->handover = NULL; /* the cgroup entry goes away now */
		return fact(WBG_EVENT_REMOVED, 0); /* the route says what follows */
	}
	return LC_NO_FACT;
}

/* What a dirty cgroup's plan says, when it names nothing to flush of its
 * own: a parent whose children cover it, a set BPF may have evicted (then
 * every filesystem), excluded filesystems, or pages that are not its own. */
static struct wbg_fact plan_empty(struct wbg_lifecycle *lc, struct wbg_cgroup *c, struct wbg_handover *h,
				 struct wbg_plan *plan)
{
	int r;

	if (plan->own_set_missing && h->dirty_known && descendants_handed_over(lc, c->path)) {
		/* A pod's cgroup whose containers were removed just before it
		 * (runtimes rmdir them at once): its memory.stat still counts
		 * their dying cgroups' pages, which their handovers cover. */
		handover_conclude(h, WBG_CAUSE_CHILDREN_COVER);
	} else if (plan->set_maybe_evicted && h->dirty_known) {
		/* Its set may be one the BPF LRU evicted (a tenant with many
		 * cgroups): every filesystem, rather than dirty data left. */
		lc->event_stats.plans_set_evicted++;
		r = lc->world.flusher->plan_mounts(lc->world.flusher_data, plan);
		plan->source = "mounts (bpf set evicted)";
		if (r >= 0 && plan->n > 0) {
			h->route = h->trigger == WBG_TRIGGER_API ? WBG_ROUTE_ASKED : WBG_ROUTE_FLUSH;
			return fact(WBG_EVENT_DIRTY, 0);
		}
		handover_conclude(h, r < 0 ? WBG_CAUSE_PLAN_FAILED : WBG_CAUSE_NO_FILESYSTEM);
	} else if (plan->n_excluded) {
		/* network and FUSE filesystems have no cgroup writeback (no
		 * dying wb to stall on), and their syncfs can hang */
		handover_conclude(h, WBG_CAUSE_EXCLUDED);
		h->not_own = true;
	} else {
		/* Nothing recorded: with BPF this means the cgroup dirtied no
		 * filesystem we can reach; with its set missing (not evicted),
		 * that the dirty pages charged to it are not its own writes, so
		 * they do not boost. */
		handover_conclude(h, !h->dirty_known		? WBG_CAUSE_NOTHING_RECORDED
				     : plan->own_set_missing ? WBG_CAUSE_NOT_OWN
							     : WBG_CAUSE_NO_FILESYSTEM);
		h->not_own = plan->own_set_missing;
	}
	return fact(WBG_EVENT_NOTHING, 0);
}

struct wbg_fact lc_event_start(struct wbg_lifecycle *lc, struct wbg_cgroup *c, enum wbg_trigger trigger,
			      struct wbg_handover **ret_h, struct wbg_plan *plan)
{
	struct wbg_handover *h;
	uint64_t dirty = 0, wb = 0;
	struct wbg_fact ev;
	bool exit;
	int r;

	*ret_h = NULL;
	h = lc_start(lc, c->id, c->path, trigger);
	if (!h)
		return LC_NO_FACT;
	*ret_h = h;
	if (trigger == WBG_TRIGGER_REMOVED || trigger == WBG_TRIGGER_RESCAN || trigger == WBG_TRIGGER_RMDIR_BPF)
		h->t_removed = h->t_trigger;
	else
		c->handover = h;

	/* A parent (a pod slice, a delegated service) is emptied when its
	 * children are: they have handovers of their own. */
	if (!h->t_removed && trigger != WBG_TRIGGER_API && lc->world.kernel->has_children(lc->world.kernel_data, c->path))
		return end_early(lc, c, h, WBG_CAUSE_CHILDREN);
	/* An explicit request is done whatever the kernel can do itself. */
	if (!lc->mitigating && trigger != WBG_TRIGGER_API)
		return end_early(lc, c, h, WBG_CAUSE_MITIGATION_OFF);
	if (!lc->params.flush)
		return end_early(lc, c, h, WBG_CAUSE_FLUSH_OFF);
	/* While the cgroup exists, its own counters say whether anything is
	 * dirty; a vanished cgroup (ENOENT/ENODEV) is normal here. */
	if (!h->t_removed) {
		r = lc->world.kernel->read_dirty(lc->world.kernel_data, c->path, &dirty, &wb);
		if (r >= 0) {
			h->dirty_known = true;
			h->dirty_bytes = dirty;
			if (dirty + wb == 0)
				return end_early(lc, c, h, WBG_CAUSE_NOTHING_DIRTY);
		} else
			log_debug_errno(r, "No memory.stat for %s", c->path);
	}

	/* the exit recipe writes the cgroup's own inodes: the plan takes its
	 * inode sets */
	exit = lc->params.at_exit && trigger != WBG_TRIGGER_API;
	r = lc->world.flusher->plan(lc->world.flusher_data, c->id, c, exit, plan);
	/* its route, fixed here: what the first plan and the mode say */
	if (r < 0) {
		log_error_errno(r, "Cannot plan the flush of %s", c->path);
		handover_conclude(h, WBG_CAUSE_PLAN_FAILED);
		ev = fact(WBG_EVENT_NOTHING, 0);
	} else if (plan->n == 0)
		ev = plan_empty(lc, c, h, plan);
	else if (trigger == WBG_TRIGGER_API) {
		h->route = WBG_ROUTE_ASKED;
		ev = fact(WBG_EVENT_DIRTY, 0);
	} else if (exit) {
		h->route = WBG_ROUTE_EXIT;
		exit_recipe(lc, h, plan);
		ev = fact(WBG_EVENT_DIRTY, 0);
	} else {
		/* on-evidence: no data I/O now; its removal is watched */
		h->route = lc->params.on_evidence ? WBG_ROUTE_WATCH : WBG_ROUTE_FLUSH;
		ev = fact(WBG_EVENT_DIRTY, 0);
	}
	if (ev.event != WBG_EVENT_NOTHING)
		return ev;
	if (h->t_removed && h->outcome != WBG_OUTCOME_FAILED && h->outcome != WBG_OUTCOME_CLEAN)
		return fact(WBG_EVENT_NOTHING, WBG_GUARD_CHARGED); /* the cleanup still moves its inodes */
	/* ended before its removal, as end_early: the removal is no second
	 * record, unless it failed (the removal tries again) */
	lc_settle(lc, c->id, !h->t_removed && trigger != WBG_TRIGGER_API && h->outcome != WBG_OUTCOME_FAILED);
	c->handover = NULL;
	return fact(WBG_EVENT_NOTHING, 0);
}

struct wbg_fact lc_event_repopulated(struct wbg_lifecycle *lc, struct wbg_cgroup *c, struct wbg_handover *h)
{
	lc_settle(lc, c->id, false); /* in use again: its next going-away is news */
	if (!h || h->phase == WBG_PHASE_FLUSHING)
		return LC_NO_FACT; /* its flush ends first; its removal is to come */
	/* In use again before anyone removed it: that handover is over. */
	c->handover = NULL;
	handover_conclude(h, WBG_CAUSE_REPOPULATED); /* deferred: clean (nothing flushed, its wb never died) */
	return fact(WBG_EVENT_REPOPULATED, 0);
}

struct wbg_fact lc_event_recovered(struct wbg_lifecycle *lc, struct wbg_handover *h, const dev_t *devs, const bool *bdev,
				  size_t n, struct wbg_plan *plan)
{
	int r = lc->world.flusher->plan_recorded(lc->world.flusher_data, devs, bdev, n, plan);

	h->t_removed = h->t_trigger;
	if (r >= 0 && plan->n > 0)
		return fact(WBG_EVENT_DIRTY, 0);
	handover_conclude(h, r < 0 ? WBG_CAUSE_PLAN_FAILED : WBG_CAUSE_FILESYSTEMS_GONE);
	return fact(WBG_EVENT_NOTHING, 0);
}

void lifecycle_job_type(struct wbg_lifecycle *lc, struct wbg_cgroup *c, const char *type)
{
	/* Only a stop (or restart) empties the cgroup; for other jobs the
	 * early flush was harmless and the record says what it was for. */
	if (c->handover && c->handover->trigger == WBG_TRIGGER_STOP_JOB && strcmp(type, "stop") != 0 &&
	    strcmp(type, "restart") != 0)
		handover_conclude(c->handover, strcmp(type, "reload") == 0 ? WBG_CAUSE_JOB_RELOAD : WBG_CAUSE_JOB_NOT_STOP);
}
