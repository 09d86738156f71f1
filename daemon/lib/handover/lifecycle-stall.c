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

#include "lifecycle-internal.h"
#include "wbg-base.h"

/* Per device, at most STALL_BURST at once and STALL_PER_SEC a second; of
 * which one tenant (where the path names it) at most a quarter, so that
 * one tenant's stalled cgroups leave the others' theirs. */
#define STALL_BURST 16
#define STALL_PER_SEC 16
#define STALL_TENANT_BURST 4
#define STALL_TENANT_PER_SEC 4
/* A capped stall is reported again this much later. */
#define STALL_RETRY_USEC (1000 * 1000)

/* A capped stall: BPF keeps it reported until its time comes. */
static void stall_retry_later(struct wbg_lifecycle *lc, uint64_t cgroup_id, uint64_t now)
{
	size_t n = ELEMENTSOF(lc->stall.retry);

	if (lc->stall.n_retry == n) {
		uint64_t k = ++lc->stall.stats.retry_full;

		if (!(k & (k - 1)))
			log_warning("%zu capped stalls wait to be reported again: dying cgroup %" PRIu64
				    " re-armed at once (%" PRIu64 " so far)",
				    n, cgroup_id, k);
		lc->world.kernel->disarm(lc->world.kernel_data, cgroup_id);
		return;
	}
	lc->stall.retry[(lc->stall.retry_head + lc->stall.n_retry++) % n].cgroup_id = cgroup_id;
	lc->stall.retry[(lc->stall.retry_head + lc->stall.n_retry - 1) % n].due = now + STALL_RETRY_USEC;
}

const struct wbg_stall_stats *lc_stall_stats(const struct wbg_lifecycle *lc)
{
	return &lc->stall.stats;
}

uint64_t lc_stall_retry_due(const struct wbg_lifecycle *lc)
{
	return lc->stall.n_retry ? lc->stall.retry[lc->stall.retry_head].due : 0;
}

void lc_stall_retry(struct wbg_lifecycle *lc, uint64_t now)
{
	size_t n = ELEMENTSOF(lc->stall.retry);

	/* a FIFO of one delay: the due times only grow */
	while (lc->stall.n_retry && lc->stall.retry[lc->stall.retry_head].due <= now) {
		uint64_t id = lc->stall.retry[lc->stall.retry_head].cgroup_id;

		/* one that got a handover since: that one disarms it at its end */
		if (!lifecycle_cgroup_active(lc, id))
			lc->world.kernel->disarm(lc->world.kernel_data, id);
		lc->stall.retry_head = (lc->stall.retry_head + 1) % n;
		lc->stall.n_retry--;
	}
}

int lc_stall_admit(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, dev_t bdi_dev, bool in_scope,
		   uint64_t now)
{
	uint64_t tenant = 0;
	const char *why = NULL;

	if (!lc->mitigating || !lc->params.flush) {
		lc->stall.stats.off++;
		return 0;
	}
	if (!in_scope) {
		/* not ours to flush; BPF keeps it reported */
		lc->stall.stats.out_of_scope++;
		return 0;
	}
	if (lifecycle_cgroup_active(lc, cgroup_id)) {
		/* its handover is at it (a watched one hears of the stall
		 * through its own arming) */
		lc->stall.stats.covered++;
		return 0;
	}
	if (path)
		tenant = handover_tenant(path);
	/* a path unknown (removed while wbguardd was down) names no tenant:
	 * the device's budget alone */
	if (tenant && !rate_take_keyed(lc->stall.tenant_rate, ELEMENTSOF(lc->stall.tenant_rate), bdi_dev, tenant,
				       STALL_TENANT_PER_SEC, STALL_TENANT_BURST, now)) {
		lc->stall.stats.tenant_capped++;
		why = "its tenant's share of stall handovers on that device";
	} else if (!rate_take_keyed(lc->stall.rate, ELEMENTSOF(lc->stall.rate), bdi_dev, 0, STALL_PER_SEC, STALL_BURST,
				    now)) {
		lc->stall.stats.capped++;
		why = "too many stall handovers on that device";
	}
	if (why) {
		uint64_t k = lc->stall.stats.capped + lc->stall.stats.tenant_capped;

		if (!(k & (k - 1))) /* logged at 1, 2, 4...: a flood writes a few lines */
			log_warning("Stall of dying cgroup %" PRIu64 " on %u:%u: %s (%" PRIu64
				    " refused so far); reported again in a second",
				    cgroup_id, major(bdi_dev), minor(bdi_dev), why, k);
		stall_retry_later(lc, cgroup_id, now);
		return -EBUSY;
	}
	return 1;
}

struct wbg_fact lc_stall_plan(struct wbg_lifecycle *lc, struct wbg_handover *h, dev_t bdi_dev, struct wbg_plan *plan)
{
	int r;

	lc->stall.stats.started++;
	h->t_removed = h->t_trigger;
	h->stall_dev = bdi_dev;
	log_notice("Stall: a foreign flush to dying cgroup %" PRIu64 " (%s) on %u:%u failed, and nothing covered it: "
		   "handover %" PRIu64,
		   h->cgroup_id, *h->path ? h->path : "path unknown", major(bdi_dev), minor(bdi_dev), h->id);
	/* what to write: its own, as BPF recorded it, else that device's
	 * filesystem */
	r = lc->world.flusher->plan(lc->world.flusher_data, h->cgroup_id, NULL, false, plan);
	if (r >= 0 && plan->n == 0) {
		plan_free(plan);
		r = lc->world.flusher->plan_recorded(lc->world.flusher_data, &bdi_dev, &(bool){ false }, 1, plan);
	}
	if (r >= 0 && plan->n > 0) {
		h->route = WBG_ROUTE_WATCH; /* watched like any removal on-evidence */
		return fact(WBG_EVENT_DIRTY, 0);
	}
	handover_conclude(h, r < 0 ? WBG_CAUSE_PLAN_FAILED : WBG_CAUSE_NO_STALL_FS);
	return fact(WBG_EVENT_NOTHING, 0);
}
