/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stall itself as evidence: a dying cgroup that no handover covers
 * (wbguardd was down at its removal, a restart forgot it, the watch table
 * refused it) gets one when the kernel fails a foreign flush to it, the
 * first sign BPF can see. Bounded: BPF reports a cgroup once until its
 * handover ends; one handover per cgroup; a rate per device. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <sys/sysmacros.h>

#include "lifecycle.h"
#include "lifecycle-internal.h"
#include "log.h"
#include "macro.h"

/* Per device, at most STALL_BURST at once and STALL_PER_SEC a second. */
#define STALL_BURST 16
#define STALL_PER_SEC 16

/* The device's bucket; a device not seen lately takes the least recently
 * used one's place. */
static bool stall_rate_take(struct wbg_lifecycle *hs, dev_t dev, uint64_t now)
{
	size_t i, lru = 0;

	for (i = 0; i < ELEMENTSOF(hs->stall_rate); i++) {
		if (hs->stall_rate[i].dev == dev && hs->stall_rate[i].rate.used)
			break;
		if (hs->stall_rate[i].rate.refilled < hs->stall_rate[lru].rate.refilled)
			lru = i;
	}
	if (i == ELEMENTSOF(hs->stall_rate)) {
		i = lru;
		hs->stall_rate[i].dev = dev;
		hs->stall_rate[i].rate = (struct wbg_rate){ 0 };
	}
	return rate_take(&hs->stall_rate[i].rate, STALL_PER_SEC, STALL_BURST, now);
}

int lifecycle_stall(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, dev_t bdi_dev)
{
	struct wbg_plan plan = { 0 };
	struct wbg_handover *h;
	uint64_t now = hs_now(hs), id;
	int r;

	if (!hs->mitigating || !hs->params.flush) {
		hs->stats.stall_off++;
		return 0;
	}
	if (lifecycle_cgroup_active(hs, cgroup_id)) {
		/* its handover is at it (a watched one hears of the stall
		 * through its own arming) */
		hs->stats.stall_covered++;
		return 0;
	}
	if (!stall_rate_take(hs, bdi_dev, now)) {
		uint64_t k = ++hs->stats.stall_capped;

		if (!(k & (k - 1))) /* logged at 1, 2, 4...: a flood writes a few lines */
			log_warning("Stall of dying cgroup %" PRIu64 " on %u:%u: too many stall handovers on that device "
				    "(%" PRIu64 " refused so far); reported again at its next failed flush",
				    cgroup_id, major(bdi_dev), minor(bdi_dev), hs->stats.stall_capped);
		hs->ops->kernel->disarm(hs->userdata, cgroup_id);
		return -EBUSY;
	}
	h = hs_start(hs, cgroup_id, path && *path ? path : "", WBG_TRIGGER_STALL);
	if (!h)
		return -ENOMEM;
	hs->stats.stall_started++;
	id = h->id;
	h->t_removed = h->t_trigger;
	h->stall_dev = bdi_dev;
	log_notice("Stall: a foreign flush to dying cgroup %" PRIu64 " (%s) on %u:%u failed, and nothing covered it: "
		   "handover %" PRIu64,
		   cgroup_id, *h->path ? h->path : "path unknown", major(bdi_dev), minor(bdi_dev), id);
	/* what to write: its own, as BPF recorded it, else that device's
	 * filesystem */
	r = hs->ops->flusher->plan(hs->userdata, cgroup_id, NULL, false, &plan);
	if (r >= 0 && plan.n == 0) {
		plan_free(&plan);
		r = hs->ops->flusher->plan_recorded(hs->userdata, &bdi_dev, &(bool){ false }, 1, &plan);
	}
	if (r < 0 || plan.n == 0) {
		h->outcome = r < 0 ? WBG_OUTCOME_FAILED : WBG_OUTCOME_NO_TARGETS;
		h->reason = r < 0 ? "planning failed" : "no filesystem on the stalled device";
		hs_step(hs, h, WBG_EVENT_NOTHING, NULL);
		plan_free(&plan);
		hs_reschedule(hs);
		return 1;
	}
	/* watched like any removal on-evidence, and its first evidence is the
	 * stall itself */
	hs_step(hs, h, WBG_EVENT_DIRTY_WATCH, &plan);
	plan_free(&plan);
	hs_step(hs, h, WBG_EVENT_REMOVED, NULL);
	h = hs_find(hs, id);
	if (h && h->phase == WBG_PHASE_WATCHED) {
		h->evidence++;
		h->t_evidence = now;
		hs_step(hs, h, WBG_EVENT_EVIDENCE, NULL);
	}
	hs_reschedule(hs);
	return 1;
}
