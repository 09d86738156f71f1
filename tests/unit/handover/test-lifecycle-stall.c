/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stalls in the handover lifecycle (lifecycle-stall.c), against the
 * pretend world: a stall nothing covered starts a handover of its own,
 * bounded per device and per tenant, re-armed when refused; and the boost
 * a handover that did not flush gets, bounded per tenant. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wbg-kernel.h"
#include "lifecycle-internal.h"
#include "lifecycle-world.h"
#include "tap.h"

static void test_boost(void)
{
	struct wbg_handover h = { .outcome = WBG_OUTCOME_FLUSHED, .verify = 0 };

	CHECK(!handover_wants_boost(&h, true),
	      "flushed, its dying wb dirty again at the check (a live cgroup's writing): no boost");
	h.outcome = WBG_OUTCOME_TIMEOUT;
	CHECK(handover_wants_boost(&h, true), "its own flush timed out: boost");
	h.outcome = WBG_OUTCOME_FAILED;
	h.not_own = true;
	CHECK(!handover_wants_boost(&h, true), "failed, but the pages were not its own: no boost");
	h = (struct wbg_handover){ .outcome = WBG_OUTCOME_DRAINED };
	CHECK(!handover_wants_boost(&h, true), "drained: no boost");
	h.outcome = WBG_OUTCOME_DISABLED;
	CHECK(handover_wants_boost(&h, false), "[flush] enable = no: the boost is all there is");
	CHECK(!handover_wants_boost(&h, true), "disabled while flushing is on: no boost");
}

static void test_boost_limit(void)
{
	struct boost_limit l = { 0 };
	unsigned ok = 0;

	for (unsigned i = 0; i < 10; i++)
		ok += boost_limit_take(&l, 42, 1000 + i);
	CHECK(ok == BOOST_LIMIT_BURST, "one tenant failing flushes again and again: %u boosts", ok);
	CHECK(l.refused == 10 - BOOST_LIMIT_BURST, "one tenant failing flushes again and again: the rest refused and counted");
	CHECK(boost_limit_take(&l, 43, 2000), "another tenant still boosts");
	CHECK(!boost_limit_take(&l, 42, 1000 + BOOST_LIMIT_REFILL_USEC - 1), "no boost before the refill period");
	CHECK(boost_limit_take(&l, 42, 1000 + BOOST_LIMIT_REFILL_USEC), "one more at the refill period");
	CHECK(!boost_limit_take(&l, 42, 1001 + BOOST_LIMIT_REFILL_USEC), "only one more per refill period");
	for (uint64_t t = 100; t < 100 + BOOST_LIMIT_TENANTS; t++)
		(void)boost_limit_take(&l, t, 5000 + t);
	CHECK(l.evicted >= 2, "more tenants than the table: the least recently seen make room (counted)");
}

static void test_stall_handover(void)
{
	struct wbg_handover *h;
	unsigned disarmed;

	setup(true);
	lc.mitigating = false;
	CHECK(lifecycle_stall(&lc, 90, "", makedev(253, 0), true) == 0 && lifecycle_n_active(&lc) == 0,
	      "a stall while not mitigating: nothing started");
	CHECK(lc_stall_stats(&lc)->off == 1, "a stall while not mitigating: counted");
	lc.mitigating = true;
	world.plan_targets = 0; /* wbguardd was down at its removal: BPF has nothing of it */
	CHECK(lifecycle_stall(&lc, 90, "k/gone", makedev(253, 0), true) == 1 && lifecycle_n_active(&lc) == 1,
	      "a stall nothing covered: a handover");
	CHECK(lc.watch.n == 1, "a stall nothing covered: watched like any removal on-evidence");
	h = lc.watch.v[0];
	CHECK(h->trigger == WBG_TRIGGER_STALL, "a stall's handover: triggered by the stall");
	CHECK(h->phase == WBG_PHASE_FLUSHING && world.n_sub == 1, "a stall's handover: flushed at once");
	CHECK(world.sub[0].dev == makedev(253, 0), "a stall's handover: the stalled device's filesystem");
	CHECK(h->evidence == 1, "a stall's handover: the stall is its evidence");
	CHECK(lifecycle_stall(&lc, 90, "k/gone", makedev(253, 0), true) == 0 && world.n_sub == 1,
	      "reported again while its handover runs: covered, nothing more");
	CHECK(lc_stall_stats(&lc)->covered == 1, "reported again while its handover runs: counted");
	disarmed = world.disarmed;
	job_done(h->id, 0);
	advance(world.now + 2 * S);
	CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_STALL, "flushed, cleaned up, clean: recorded (trigger stall)");
	CHECK(world.last_outcome == WBG_OUTCOME_FLUSHED, "flushed, cleaned up, clean: recorded flushed");
	CHECK(world.disarmed == disarmed + 1, "its end: BPF may report its next stall");
	teardown();

	/* nothing to flush on the stalled device (no filesystem of it here):
	 * ended, and BPF keeps it reported, so its next failed flushes do not
	 * each start another */
	setup(true);
	world.plan_targets = 0;
	world.recorded_targets = 0;
	disarmed = world.disarmed;
	CHECK(lifecycle_stall(&lc, 95, "", makedev(7, 7), true) == 1, "a stall with nothing to flush: a handover");
	CHECK(world_recorded(1, WBG_OUTCOME_NO_TARGETS), "a stall with nothing to flush: recorded no-targets");
	CHECK(world.disarmed == disarmed, "a stall with nothing to flush: not reported again at every failed flush");
	teardown();

	/* a cgroup whose removal is watched: its own arming covers it */
	setup(true);
	(void)watched(91, "k/watched");
	CHECK(lifecycle_stall(&lc, 91, "k/watched", makedev(253, 0), true) == 0 && world.n_sub == 0,
	      "a stall of a watched cgroup: covered, no second handover");
	CHECK(lc_stall_stats(&lc)->covered == 1, "a stall of a watched cgroup: counted covered");
	teardown();
}

/* Stalls at once from the devices and tenants in ids [from, to): how many
 * started, how many were refused (-EBUSY). */
static void stalls(uint64_t from, uint64_t to, const char *tenant, dev_t dev, int *started, int *capped)
{
	*started = *capped = 0;
	for (uint64_t id = from; id < to; id++) {
		char p[64] = "";
		int r;

		if (tenant)
			snprintf(p, sizeof(p), "%s/c%d", tenant, (int)id);
		r = lifecycle_stall(&lc, id, p, dev, true);
		*started += r == 1;
		*capped += r == -EBUSY;
	}
}

static void test_stall_bounds(void)
{
	unsigned disarmed, before;
	int started, capped;

	/* a rate per device */
	setup(true);
	world.plan_targets = 0;
	stalls(100, 120, NULL, makedev(253, 0), &started, &capped);
	CHECK(started == 16, "20 stalls on one device at once: 16 started");
	CHECK(capped == 4, "20 stalls on one device at once: 4 refused");
	CHECK(lc_stall_stats(&lc)->capped == 4, "20 stalls on one device at once: the refusals counted");
	CHECK(lifecycle_stall(&lc, 200, "", makedev(8, 0), true) == 1, "another device still has its own");
	world.now += S;
	CHECK(lifecycle_stall(&lc, 120, "", makedev(253, 0), true) == 1, "a second later the device has room again");
	teardown();

	/* one tenant's share of a device's: 4 of its stalls at once, and the
	 * others' still start; a capped one is reported again a second later,
	 * not at each failed flush */
	setup(true);
	world.plan_targets = 0;
	disarmed = world.disarmed;
	stalls(300, 310, "system.slice/noisy.service", makedev(253, 0), &started, &capped);
	CHECK(started == 4 && capped == 6, "10 stalls of one tenant: 4 started, 6 refused for its share (%d, %d)", started,
	      capped);
	CHECK(lc_stall_stats(&lc)->tenant_capped == 6, "10 stalls of one tenant: the refusals counted as its share's");
	CHECK(world.disarmed == disarmed, "10 stalls of one tenant: none re-armed yet");
	CHECK(lifecycle_stall(&lc, 320, "system.slice/quiet.service", makedev(253, 0), true) == 1,
	      "another tenant's stall on that device starts");
	advance(world.now + S + S / 10);
	CHECK(world.disarmed >= disarmed + 6, "a second later the 6 refused are re-armed (reported again at their next stall)");

	/* more capped than the retry FIFO holds: the rest re-armed at once,
	 * counted */
	before = world.disarmed;
	stalls(1000, 1000 + 16 + 256 + 10, NULL, makedev(9, 9), &started, &capped);
	CHECK(lc_stall_stats(&lc)->retry_full == 10, "16 started, 256 wait in the FIFO, the 10 past it counted (%llu)",
	      (unsigned long long)lc_stall_stats(&lc)->retry_full);
	CHECK(world.disarmed == before + 10, "the 10 past the FIFO re-armed at once");
	advance(world.now + 2 * S);
	CHECK(lifecycle_stall(&lc, 400, "outside/x.service", makedev(253, 0), false) == 0 &&
		      !lifecycle_cgroup_active(&lc, 400),
	      "a stall outside [daemon] roots: nothing started");
	CHECK(lc_stall_stats(&lc)->out_of_scope == 1, "a stall outside [daemon] roots: counted");
	teardown();

	/* the stall's flush is evidence like any: the node-wide cap applies */
	setup(true);
	world.plan_targets = 0;
	lc.params.watch.evidence_per_sec = 2;
	stalls(500, 504, NULL, makedev(253, 0), &started, &capped);
	CHECK(world.n_sub == 2, "4 stalls at once with a cap of 2 evidence flushes a second: 2 flushed now (%zu)",
	      (size_t)world.n_sub);
	CHECK(lc.watch.stats.evidence_capped == 2, "4 stalls at once with a cap of 2 a second: 2 put off and counted");
	teardown();
}

WORLD_MAIN(test_boost, test_boost_limit, test_stall_handover, test_stall_bounds)
