/* SPDX-License-Identifier: GPL-2.0-or-later */
/* [flush] mode = on-evidence in the lifecycle: the dying-wb watch (dying.h)
 * takes a removed cgroup's handover, flushes it when the evidence comes,
 * and ends it when its wb is clean; its world is the lifecycle's ops. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>

#include "handovers.h"
#include "handovers-internal.h"
#include "log.h"
#include "macro.h"

static int op_arm(void *userdata, uint64_t cgroup_id, bool stall_only)
{
	struct wbg_handovers *hs = userdata;
	int r = hs->ops->arm(hs->userdata, cgroup_id, stall_only);

	if (r < 0)
		log_debug_errno(r, "Cannot arm the evidence of cgroup %" PRIu64 ": its drain and max_age still cover it",
				cgroup_id);
	return r;
}

static void op_disarm(void *userdata, uint64_t cgroup_id)
{
	struct wbg_handovers *hs = userdata;

	hs->ops->disarm(hs->userdata, cgroup_id);
}

static int op_flush(void *userdata, uint64_t cgroup_id, void *cookie, bool evidence)
{
	struct wbg_handovers *hs = userdata;
	struct wbg_handover *h = cookie;
	int r;

	h->flushes++;
	r = hs_flush(hs, h, evidence);
	if (r < 0) {
		h->flushes--;
		return r;
	}
	if (h->n_pending == 0) /* nothing to write after all */
		dying_flush_done(&hs->dying, cgroup_id, h->n_failed == 0, hs_now(hs));
	return 0;
}

static int op_cleanup(void *userdata)
{
	struct wbg_handovers *hs = userdata;
	int r = hs->ops->cleanup(hs->userdata);

	if (r == -EOPNOTSUPP)
		return r;
	if (r < 0) {
		hs->stats.cleanup_failures++;
		log_warning_errno(r, "Scratch memcg cycle for the watched dying wbs failed");
		return r;
	}
	hs->stats.cleanup_cycles++;
	return 0;
}

static int op_dirty(void *userdata, uint64_t **ret, size_t *ret_n)
{
	struct wbg_handovers *hs = userdata;

	return hs->ops->dirty_cgroups(hs->userdata, ret, ret_n);
}

/* The watch is over: the handover's outcome from how it went. */
static void op_done(void *userdata, void *cookie, const struct dying_result *res)
{
	struct wbg_handovers *hs = userdata;
	struct wbg_handover *h = cookie;

	h->evidence = res->evidence;
	h->t_evidence = res->t_evidence;
	if (res->cleanup_done) {
		h->cleanup_done = true;
		h->t_cleanup = res->t_cleanup;
	}
	h->verify = res->verify;
	if (res->verify >= 0)
		h->t_verified = hs_now(hs);
	if (res->verify == 0) {
		hs->stats.verify_dirty++;
		log_notice("A dying wb of %s is still dirty after its flush at max_age; no longer watched", h->path);
	}
	if (h->outcome == WBG_OUTCOME_PENDING) {
		if (res->end == DYING_END_DROPPED && hs->stopping) {
			h->outcome = WBG_OUTCOME_INTERRUPTED;
			h->reason = "daemon stopped while its dying wb was watched";
		} else if (res->flushes) {
			h->outcome = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
			h->reason = res->expired ? "not drained at watch_max_age_sec: flushed" : NULL;
		} else {
			h->outcome = WBG_OUTCOME_DRAINED;
			h->reason = res->end == DYING_END_DROPPED	? "released by the kernel while watched"
				    : res->end == DYING_END_UNVERIFIED ? "no wb_stats: taken as drained after one expiry"
									 : "its dying wb drained by itself; no flush needed";
		}
	}
	hs->ops->forget(hs->userdata, h->cgroup_id);
	hs_retire(hs, h);
}

static const struct dying_ops dying_ops = {
	.arm = op_arm,
	.disarm = op_disarm,
	.flush = op_flush,
	.cleanup = op_cleanup,
	.dirty_cgroups = op_dirty,
	.done = op_done,
};

void hs_dying_init(struct wbg_handovers *hs)
{
	dying_init(&hs->dying, &hs->params.dying, &dying_ops, hs);
}

/* The watch's next tick at usec, or sooner. */
static void dying_at(struct wbg_handovers *hs, uint64_t usec)
{
	if (!hs->dying_due || usec < hs->dying_due)
		hs->dying_due = usec;
}

int hs_dying_watch(struct wbg_handovers *hs, struct wbg_handover *h)
{
	int r = dying_add(&hs->dying, h->cgroup_id, h, hs_now(hs));

	if (r == -ENOSPC)
		log_warning("%zu dying cgroups watched ([flush] watch_max): %s is flushed now instead",
			    dying_count(&hs->dying), h->path);
	if (r < 0)
		return r;
	h->watched = true;
	log_debug("Watching the dying wb of %s (id %" PRIu64 ")", h->path, h->cgroup_id);
	dying_at(hs, hs_now(hs) + DYING_TICK_USEC);
	return 0;
}

bool hs_dying_flushed(struct wbg_handovers *hs, struct wbg_handover *h)
{
	if (!h->watched || !dying_has(&hs->dying, h->cgroup_id))
		return false;
	dying_flush_done(&hs->dying, h->cgroup_id, h->n_failed == 0 && h->outcome != WBG_OUTCOME_TIMEOUT, hs_now(hs));
	/* the stall lasts until the cleanup has run: at once */
	dying_at(hs, hs_now(hs));
	return true;
}

struct by_cgroup {
	uint64_t cgroup_id;
	const struct wbg_handover *found;
};

static void match_watched(const void *nodep, VISIT which, void *closure)
{
	const struct wbg_handover *h = *(const struct wbg_handover *const *)nodep;
	struct by_cgroup *b = closure;

	if ((which == postorder || which == leaf) && h->cgroup_id == b->cgroup_id && h->watched)
		b->found = h;
}

int handovers_evidence(struct wbg_handovers *hs, uint64_t cgroup_id, const char **ret_path)
{
	struct by_cgroup b = { cgroup_id, NULL };
	uint64_t now = hs_now(hs);
	int r = dying_evidence(&hs->dying, cgroup_id, now);

	if (r < 0)
		return r;
	twalk_r(hs->active, match_watched, &b);
	/* deferred: due reflush_sec after the last flush */
	dying_at(hs, now + (r > 0 ? hs->dying.params.reflush_usec : DYING_TICK_USEC));
	hs_reschedule(hs);
	*ret_path = b.found ? b.found->path : NULL;
	return 0;
}

void handovers_released(struct wbg_handovers *hs, uint64_t cgroup_id)
{
	dying_release(&hs->dying, cgroup_id);
	hs_reschedule(hs);
}

bool handovers_watching(const struct wbg_handovers *hs, uint64_t cgroup_id)
{
	return dying_has(&hs->dying, cgroup_id);
}
