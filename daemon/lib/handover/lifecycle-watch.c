/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * [flush] mode = on-evidence: the table of removed cgroups whose dying wbs
 * may still hold dirty inodes, and the facts about them that become events.
 *
 * A removal costs no data I/O. The kernel keeps writing a dying wb back on
 * its own (its delayed work and the periodic old-data flush still visit
 * it), so within about an expiry it has no dirty IO left (DRAINED); the
 * cleanup batch then makes the kernel's offline cleanup move its inodes to
 * a live wb. Only when a live cgroup dirties an inode still on the dying wb
 * (the stall's first sign: BPF on writeback:track_foreign_dirty, one event
 * per arming) is the removed cgroup's own data flushed, at once (EVIDENCE),
 * and the cleanup re-run. A wb still dirty after that is watched again
 * (VERIFIED [watch_again]); a second flush waits reflush_sec after the first.
 * A wb clean but still listed in wb_stats has inodes attached (a writer
 * that kept dirtying them kept the kernel's cleanup off them): the watch
 * goes on, the cleanup re-run every drain_after_sec, until the kernel has
 * moved them to a live wb and the dying wb is off the list ("moved"); a
 * clean look alone would end it while the next foreign flush still fails.
 * Where
 * wb_stats cannot say whether it is still dirty (before 6.10), a flushed
 * cgroup is watched for the stall itself until LC_QUIET_USEC pass without
 * it. watch_max_age_sec ends every watch: one never flushed is flushed
 * (MAX_AGE), one flushed already is given up (EXPIRED).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "lifecycle-internal.h"
#include "wbg-base.h"
#include "wbg-kernel.h"

static ssize_t watch_index(const struct wbg_lifecycle *lc, const struct wbg_handover *h)
{
	for (size_t i = 0; i < lc->watch.n; i++)
		if (lc->watch.v[i] == h)
			return (ssize_t)i;
	return -1;
}

struct wbg_handover *lc_watch_find(const struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	for (size_t i = 0; i < lc->watch.n; i++)
		if (lc->watch.v[i]->cgroup_id == cgroup_id)
			return lc->watch.v[i];
	return NULL;
}

void lc_watch_at(struct wbg_lifecycle *lc, uint64_t usec)
{
	if (!lc->watch.due || usec < lc->watch.due)
		lc->watch.due = usec;
}

/* Watched (0); -ENOSPC: the table is full (counted). */
static int watch_add(struct wbg_lifecycle *lc, struct wbg_handover *h)
{
	uint64_t now = lc_now(lc);
	enum wbg_share_refusal refusal;
	size_t of_tenant = 0;
	bool pooled;
	int r;

	share_set(&lc->watch.share, lc->params.watch.max, lc->params.watch.max_per_tenant);
	for (size_t i = 0; i < lc->watch.n; i++)
		of_tenant += lc->watch.v[i]->tenant == h->tenant;
	/* (watch_max is at least 1; 0, a table of none, is a test's) */
	refusal = lc->params.watch.max ? share_take(&lc->watch.share, true, of_tenant, &pooled) : WBG_SHARE_FULL;
	if (!lc->params.watch.max)
		lc->watch.share.refused[WBG_SHARE_FULL]++;
	if (refusal != WBG_SHARE_TAKEN) {
		/* one tenant's churn, or a few tenants', does not take
		 * everyone's slots; logged at 1, 2, 4, 8...: a flood of
		 * removals writes a few lines */
		uint64_t k = lc->watch.share.refused[refusal];

		if (!(k & (k - 1)))
			log_warning("%zu dying cgroups watched, %zu of %s's tenant (%s): %s instead (%" PRIu64
				    " so far)",
				    lc->watch.n, of_tenant, h->path,
				    refusal == WBG_SHARE_FULL     ? "[flush] watch_max"
				    : refusal == WBG_SHARE_TENANT ? "[flush] watch_max_per_tenant"
								  : "its floor, and the pool of shares above floors",
				    h->route == WBG_ROUTE_EXIT ? "only cleaned up" : "flushed now", k);
		return -ENOSPC;
	}
	if (lc->watch.n == lc->watch.cap) {
		size_t cap = lc->watch.cap ? lc->watch.cap * 2 : 16;
		struct wbg_handover **v = realloc(lc->watch.v, cap * sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */

		if (!v) {
			share_give(&lc->watch.share, pooled);
			return log_oom();
		}
		lc->watch.v = v;
		lc->watch.cap = cap;
	}
	lc->watch.v[lc->watch.n++] = h;
	h->watch = h->was_watched = true;
	h->watch_pooled = pooled;
	h->t_watch_added = h->t_watch = now;
	lc->watch.stats.added++;
	/* Without the arming, no evidence comes: the drain and max_age still
	 * cover it. */
	r = lc->world.kernel->arm(lc->world.kernel_data, h->cgroup_id, false);
	if (r < 0)
		log_debug_errno(r, "Cannot arm the evidence of %s: its drain and max_age still cover it", h->path);
	log_debug("Watching the dying wb of %s (id %" PRIu64 ")", h->path, h->cgroup_id);
	lc_watch_at(lc, now + LC_WATCH_TICK_USEC);
	return 0;
}

static enum wbg_watch_end watch_end(const struct wbg_handover *h, struct wbg_fact f)
{
	if ((f.event == WBG_EVENT_VERIFIED && f.guards & WBG_GUARD_DIRTY) ||
	    (f.event == WBG_EVENT_AGED && f.guards & WBG_GUARD_FLUSHED_BEFORE))
		return WBG_WATCH_END_DIRTY;
	if (f.event == WBG_EVENT_VERIFIED)
		return h->flushes || h->route == WBG_ROUTE_EXIT ? WBG_WATCH_END_FLUSHED
		       : h->verify == 1				? WBG_WATCH_END_DRAINED
								: WBG_WATCH_END_UNVERIFIED;
	return WBG_WATCH_END_DROPPED; /* released, stopping, or a step that must not happen */
}

/* Why the watch ended, for the record. */
static const char *watch_why(const struct wbg_handover *h, struct wbg_fact f)
{
	switch (f.event) {
	case WBG_EVENT_RELEASED:
		return "released"; /* the cgroup freed: its wbs with it */
	case WBG_EVENT_AGED:
		return "max_age";
	case WBG_EVENT_VERIFIED:
		if (f.guards & WBG_GUARD_DIRTY)
			return "max_age";
		return h->verify < 0 ? "quiet" /* no wb_stats: no stall for a while */
		       : h->wb_listed ? "max_age_attached"
				      : "moved";
	default:
		return "stopped";
	}
}

/* Out of the table, its end counted by how the fact ended it. */
static void watch_remove(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f)
{
	ssize_t i = watch_index(lc, h);

	if (i < 0)
		return;
	h->watch_ended = watch_why(h, f);
	lc->watch.v[i] = lc->watch.v[--lc->watch.n];
	h->watch = false;
	share_give(&lc->watch.share, h->watch_pooled);
	lc->watch.stats.ended[watch_end(h, f)]++;
	lc->world.kernel->disarm(lc->world.kernel_data, h->cgroup_id);
	lc_forget_dirtied(lc, h->cgroup_id, WBG_FORGET_UNWATCHED, true, true);
}

struct wbg_fact lc_watch_observe(struct wbg_lifecycle *lc, const struct wbg_step_out *o)
{
	struct wbg_handover *h = o->h;

	if (o->actions & (WBG_ACT_FLUSH_ALL | WBG_ACT_FLUSH_INODES) && h->watch) {
		h->flushes++;
		lc->watch.stats.flushes++;
		h->t_last_flush = lc_now(lc);
		h->evidence_pending = h->quiet = false;
	}
	if (o->actions & WBG_ACT_WATCH && watch_add(lc, h) < 0)
		return fact(WBG_EVENT_WATCH_REFUSED, 0);
	/* after a flush of ours, only the stall is news (the writer's every
	 * dirtying would be); before any (drained, or the exit recipe's
	 * flush not enough), a live cgroup's first dirtying still is */
	if (o->actions & WBG_ACT_ARM_STALL && h->watch)
		(void)lc->world.kernel->arm(lc->world.kernel_data, h->cgroup_id, h->flushes > 0);
	if (o->actions & WBG_ACT_NOTE_EVIDENCE)
		h->evidence_pending = true;
	if (o->actions & WBG_ACT_UNWATCH)
		watch_remove(lc, h, o->fact);
	return LC_NO_FACT;
}

void lc_watch_after(struct wbg_lifecycle *lc, const struct wbg_handover *h)
{
	if (h->watch && h->evidence_pending && h->phase != WBG_PHASE_FLUSHING)
		lc_watch_at(lc, h->t_last_flush + lc->params.watch.reflush_usec);
}

void lc_watch_ended(struct wbg_lifecycle *lc, const struct wbg_handover *h)
{
	if (h->verify == 0) {
		lc->watch.stats.verify_dirty++;
		log_notice("A dying wb of %s is still dirty at watch_max_age_sec; no longer watched", h->path);
	}
}

void lc_watch_outcome(struct wbg_handover *h, struct wbg_fact f)
{
	if (h->flushes || h->route == WBG_ROUTE_EXIT)
		handover_conclude(h, h->expired ? WBG_CAUSE_WATCH_AGED_FLUSHED : WBG_CAUSE_WATCH_FLUSHED);
	else
		handover_conclude(h, f.event == WBG_EVENT_RELEASED ? WBG_CAUSE_WATCH_RELEASED
				     : h->verify < 0	       ? WBG_CAUSE_WATCH_NO_WB_STATS
							       : WBG_CAUSE_WATCH_DRAINED);
}

struct wbg_wb_look lc_wb_look(int census_result, const struct wbg_wb_census *c, uint64_t cgroup_id)
{
	if (census_result < 0)
		return (struct wbg_wb_look){ .known = false };
	return (struct wbg_wb_look){ .known = true,
				     .dirty = wbstats_set_has(c->dirty, c->n_dirty, cgroup_id),
				     .listed = wbstats_set_has(c->listed, c->n_listed, cgroup_id) };
}

struct wbg_fact lc_watch_verified(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_wb_look w, uint64_t now)
{
	bool young = now - h->t_watch_added < lc->params.watch.max_age_usec, known = w.known, dirty = w.dirty;

	h->wb_listed = known && w.listed;
	if (known && !dirty) {
		h->verify = 1;
		/* clean, but its inodes not all moved yet: watched until they
		 * are (the cleanup again after drain_after_sec) */
		if (w.listed && h->watch && young) {
			h->t_watch = now;
			return fact(WBG_EVENT_VERIFIED, WBG_GUARD_WATCH_AGAIN);
		}
		return fact(WBG_EVENT_VERIFIED, 0);
	}
	if (known) {
		/* dirtied again (a writer still on the dying wb): watched
		 * again, unless its max age is over (a never-flushed one is
		 * flushed at it first) */
		if (h->watch && (young || !h->flushes))
			return fact(WBG_EVENT_VERIFIED, WBG_GUARD_DIRTY | WBG_GUARD_WATCH_AGAIN);
		h->verify = 0;
		if (!h->watch) {
			lc->watch.stats.verify_dirty++;
			log_notice("A dying wb of %s still has dirty IO after the handover", h->path);
		}
		return fact(WBG_EVENT_VERIFIED, WBG_GUARD_DIRTY);
	}
	/* Nothing says whether the flush ended it: a writer still on the
	 * dying wb redirties its inodes at once, the kernel's cleanup skips
	 * the wb, and only the stall shows it. Watched for the stall until
	 * it stays quiet (or max_age). */
	if (h->watch && h->flushes && !h->quiet && young) {
		h->t_watch = now;
		return fact(WBG_EVENT_VERIFIED, WBG_GUARD_WATCH_AGAIN);
	}
	return fact(WBG_EVENT_VERIFIED, 0);
}

/* A watched one: drained, due for a flush, past its max age, or still
 * waiting (0). */
static struct wbg_fact watch_look(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_wb_look w, uint64_t now)
{
	const struct wbg_watch_params *p = &lc->params.watch;
	bool known = w.known, drained, old = now - h->t_watch_added >= p->max_age_usec;

	/* clean: cleaned up at once the first time; clean but still listed
	 * after a cleanup (inodes attached), again after drain_after_sec,
	 * or at its max age for the last look */
	if (known)
		drained = !w.dirty && (!w.listed || !h->cleanup_done || old || now - h->t_watch >= p->drain_after_usec);
	else if (h->flushes)
		drained = h->quiet = now - h->t_watch >= LC_QUIET_USEC;
	else
		drained = now - h->t_watch >= p->drain_after_usec;
	if (drained)
		return fact(WBG_EVENT_DRAINED, 0);
	if (!old)
		return LC_NO_FACT;
	if (h->flushes) {
		/* flushed, and still dirty or stalling at max age: a tenant's
		 * slow writers do not keep a slot for good */
		h->verify = known ? 0 : -1;
		return fact(WBG_EVENT_AGED, WBG_GUARD_FLUSHED_BEFORE);
	}
	/* the kernel should have drained it by now: flushed, as eager mode
	 * would have */
	h->expired = true;
	lc->watch.stats.expired++;
	return fact(WBG_EVENT_AGED, 0);
}

/* The node-wide cap on evidence flushes: a flood of evidence (a deploy
 * replacing hundreds of pods, a tenant re-dirtying many removed cgroups'
 * files) costs at most evidence_per_sec flushes a second; the rest stay
 * pending and the tick takes them as the bucket refills. */
static bool evidence_rate_take(struct wbg_lifecycle *lc, const struct wbg_handover *h, uint64_t now)
{
	unsigned per_sec = lc->params.watch.evidence_per_sec, of_tenant = per_sec / 4 ? per_sec / 4 : 1;

	/* a tenant's quarter first, so that one tenant's evidence leaves
	 * the others theirs (a handover of no known tenant: a path unknown,
	 * the node-wide cap alone) */
	if (per_sec && h->tenant && !rate_take_keyed(lc->watch.evidence_tenant_rate, ELEMENTSOF(lc->watch.evidence_tenant_rate), h->tenant, 0,
					of_tenant, of_tenant, now)) {
		lc->watch.stats.evidence_tenant_capped++;
		return false;
	}
	if (rate_take(&lc->watch.evidence_rate, per_sec, per_sec, now))
		return true;
	lc->watch.stats.evidence_capped++;
	return false;
}

struct wbg_fact lc_watch_due(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_wb_look w, uint64_t now)
{
	if (h->evidence_pending && h->phase != WBG_PHASE_FLUSHING &&
	    now - h->t_last_flush >= lc->params.watch.reflush_usec && evidence_rate_take(lc, h, now))
		return fact(WBG_EVENT_EVIDENCE, 0);
	if (h->phase == WBG_PHASE_WATCHED)
		return watch_look(lc, h, w, now);
	return LC_NO_FACT;
}

struct wbg_fact lc_watch_evidence(struct wbg_lifecycle *lc, struct wbg_handover *h, const struct wbg_inode_key *inode,
				 uint64_t now)
{
	lc->watch.stats.evidence++;
	if (h->evidence++ == 0)
		h->t_evidence = now;
	if (inode && inode->ino)
		h->evidence_inode = *inode;
	/* Evidence wins over a cleanup or a check under way: the writer is
	 * waiting now. Not over a flush still running, nor sooner than
	 * reflush_usec after the last (then the tick does it). */
	if (h->phase == WBG_PHASE_FLUSHING || (h->flushes && now - h->t_last_flush < lc->params.watch.reflush_usec) ||
	    !evidence_rate_take(lc, h, now))
		return fact(WBG_EVENT_EVIDENCE, WBG_GUARD_SOON);
	return fact(WBG_EVENT_EVIDENCE, 0);
}

struct wbg_fact lc_watch_released(struct wbg_handover *h)
{
	/* released, its wbs are freed with it: no dying wb is left dirty */
	if (h->phase != WBG_PHASE_FLUSHING)
		h->verify = 1;
	return fact(WBG_EVENT_RELEASED, 0);
}

bool lifecycle_watching(const struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	return lc_watch_find(lc, cgroup_id) != NULL;
}

uint64_t lc_watch_next(const struct wbg_lifecycle *lc)
{
	return lc->watch.due;
}

bool lc_watch_take_due(struct wbg_lifecycle *lc, uint64_t now)
{
	if (!lc->watch.due || lc->watch.due > now)
		return false;
	lc->watch.due = 0;
	return true;
}

size_t lc_watch_count(const struct wbg_lifecycle *lc)
{
	return lc->watch.n;
}

const struct wbg_watch_stats *lc_watch_stats(const struct wbg_lifecycle *lc)
{
	return &lc->watch.stats;
}

size_t lifecycle_n_watched(const struct wbg_lifecycle *lc)
{
	return lc_watch_count(lc);
}

struct wbg_handover *lc_watch_nth(const struct wbg_lifecycle *lc, size_t i)
{
	return i < lc->watch.n ? lc->watch.v[i] : NULL;
}

void lc_watch_flush_over(struct wbg_lifecycle *lc, const struct wbg_handover *h)
{
	if (h->watch && (h->n_failed || h->outcome == WBG_OUTCOME_TIMEOUT))
		lc->watch.stats.flush_failures++;
}

struct wbg_handover *lc_watch_for_evidence(struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	struct wbg_handover *h = lc_watch_find(lc, cgroup_id);

	if (!h)
		lc->watch.stats.evidence_ignored++;
	return h;
}

void lc_watch_clear(struct wbg_lifecycle *lc)
{
	lc->watch.due = 0;
	free(lc->watch.v);
	lc->watch.v = NULL;
	lc->watch.n = lc->watch.cap = 0;
}

void lc_watch_metrics(FILE *f, const struct wbg_lifecycle *lc)
{
	const struct wbg_watch_stats *ds = &lc->watch.stats;
	static const char *const ends[] = { "drained", "flushed", "unverified", "dirty", "dropped" };

	metric_value(f, "wbguard_dying_watched", "gauge", "Removed cgroups whose dying wbs are watched now (on-evidence).",
		     (double)lc->watch.n);
	metric_counter(f, "wbguard_dying_watch_full_total",
		       "Removals flushed eagerly because [flush] watch_max cgroups were watched.",
		       lc->watch.share.refused[WBG_SHARE_FULL]);
	metric_counter(f, "wbguard_dying_watch_tenant_full_total",
		       "Removals flushed eagerly because their tenant had [flush] watch_max_per_tenant cgroups watched.",
		       lc->watch.share.refused[WBG_SHARE_TENANT]);
	metric_counter(f, "wbguard_dying_watch_pool_full_total",
		       "Removals flushed eagerly because their tenant was above its floor of the watch table and "
		       "the pool above floors was taken.",
		       lc->watch.share.refused[WBG_SHARE_POOL]);
	metric_counter(f, "wbguard_dying_evidence_total",
		       "Foreign dirtyings of a watched dying wb's inodes reported by BPF (the stall's first sign).",
		       ds->evidence);
	metric_counter(f, "wbguard_dying_evidence_capped_total",
		       "Evidence flushes put off by [flush] evidence_flushes_per_sec (node-wide); they run as the cap allows.",
		       ds->evidence_capped);
	metric_counter(f, "wbguard_dying_evidence_tenant_capped_total",
		       "Evidence flushes put off by their tenant's quarter of [flush] evidence_flushes_per_sec; they run "
		       "as it allows.",
		       ds->evidence_tenant_capped);
	metric_counter(f, "wbguard_dying_evidence_flushes_total",
		       "Flushes started for watched dying cgroups (on evidence, or at watch_max_age_sec).", ds->flushes);
	metric_counter(f, "wbguard_dying_expired_total",
		       "Watched dying cgroups flushed because they had not drained by watch_max_age_sec.", ds->expired);
	metric_family(f, "wbguard_dying_ended_total", "counter", "Watched dying cgroups no longer watched, by how.");
	for (unsigned e = 0; e < _WBG_WATCH_END_MAX; e++)
		fprintf(f, "wbguard_dying_ended_total{end=\"%s\"} %" PRIu64 "\n", ends[e], ds->ended[e]);
}
