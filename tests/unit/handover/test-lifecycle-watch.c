/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The on-evidence watch (lifecycle-watch.c) in the lifecycle, against the
 * pretend world: drains, evidence, reflush timing, max age, the kernels
 * without wb_stats, the table's bound, releases, and what a caller asking
 * for a flush of a watched handover gets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "boost-limit.h"
#include "lifecycle-world.h"
#include "tap.h"

/* A cgroup removed dirty, on-evidence: watched. */
static struct wbg_handover *watched(uint64_t id, const char *path)
{
	struct wbg_cgroup *c = cgroup(id, path);
	struct wbg_handover *h;

	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	h = c->handover;
	removed(c);
	return h;
}

static void test_drain(void)
{
	struct wbg_handover *h;

	setup(true);
	world.wb_dirty[world.n_wb_dirty++] = 5;
	h = watched(5, "k/drain");
	CHECK(h && h->phase == WBG_PHASE_WATCHED && world.armed == 1 && world.last_armed == 5 && !world.last_arm_stall_only,
	      "a removal with dirty data is watched, armed for either sign");
	advance(world.now + 3 * S);
	CHECK(world.cleanups == 0 && world.n_sub == 0 && world.ended == 0, "still dirty: nothing done, no I/O");
	world.n_wb_dirty = 0;
	advance(world.now + 2 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_DRAINED && world.cleanups == 1 && world.n_sub == 0,
	      "drained: one cleanup cycle, verified clean, ended drained without a flush");
	CHECK(strstr(world.last_json, "\"cleanup_rerun\":true") && strstr(world.last_json, "\"dying_wb_clean\":true") &&
		      strstr(world.last_json, "\"evidence\":0"),
	      "its record says so");
	CHECK(world.disarmed == 1 && world.forgotten == 1 && lc.n_watched == 0 &&
		      lc.watch_stats.ended[WBG_WATCH_END_DRAINED] == 1,
	      "disarmed, forgotten, out of the table, counted as drained");
	teardown();
}

static void test_evidence(void)
{
	struct wbg_handover *h;
	const char *owner = NULL;
	uint64_t id;

	setup(true);
	world.wb_dirty[world.n_wb_dirty++] = 7;
	h = watched(7, "k/ev");
	id = h->id;
	world.now += S;
	CHECK(lifecycle_evidence(&lc, 7, NULL, &owner) == 0 && world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_EVIDENCE &&
		      h->phase == WBG_PHASE_FLUSHING,
	      "evidence: its own inodes flushed at once");
	CHECK(lifecycle_evidence(&lc, 7, NULL, &owner) == 1 && world.n_sub == 1 && h->evidence_pending,
	      "more evidence while it runs: noted, no second flush");
	CHECK(lifecycle_evidence(&lc, 9, NULL, &owner) == -ENOENT && lc.watch_stats.evidence_ignored == 1,
	      "evidence for a cgroup not watched: -ENOENT, counted");
	job_done(id, 0);
	CHECK(h->phase == WBG_PHASE_CLEANUP && world.last_arm_stall_only, "its flush done: the cleanup next, armed for the stall");
	advance(world.now + S / 10);
	CHECK(world.n_sub == 1 && h->phase == WBG_PHASE_VERIFY, "the noted evidence waits reflush_sec");
	advance(world.now + S / 2);
	CHECK(world.n_sub == 2 && h->phase == WBG_PHASE_FLUSHING, "then flushes again (still dirty)");
	job_done(id, 0);
	advance(world.now + S / 2);
	CHECK(world.ended == 0 && h->phase == WBG_PHASE_WATCHED && world.last_arm_stall_only,
	      "still dirty after the cleanup: watched again, for the stall only");
	world.n_wb_dirty = 0;
	advance(world.now + 3 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FLUSHED && strstr(world.last_json, "\"evidence\":2") &&
		      strstr(world.last_json, "\"evidence_flushes\":2") && lc.watch_stats.ended[WBG_WATCH_END_FLUSHED] == 1,
	      "drained after that: ended flushed, with its evidence and flushes");
	CHECK(strstr(world.last_json, "\"targets\":1,"), "its two flushes of one filesystem: one target in its record");
	teardown();

	/* the inode the evidence named is written even when the record the
	 * plan comes from lost it (LRU) */
	setup(true);
	world.plan_uses_inodes = true;
	h = watched(9, "k/lost");
	{
		struct wbg_inode_key k = { .cgroup_id = 9, .ino = 4242, .dev = (253 << 20) | 0, .gen = 7 };

		CHECK(lifecycle_evidence(&lc, 9, &k, &owner) == 0 && world.n_sub == 1 && world.sub[0].n_inodes == 1 &&
			      world.sub[0].first_ino == 4242 && lc.stats.evidence_inodes_added == 1,
		      "the evidence's own inode is in its flush, counted");
	}
	teardown();
	{
		struct wbg_plan p = { 0 };
		struct wbg_inode_key k = { .ino = 5, .dev = (8 << 20) | 1 };

		p.t = calloc(2, sizeof(*p.t));
		p.t[p.n++] = (struct wbg_plan_target){ .dev = makedev(8, 1), .use_inodes = true };
		p.t[p.n++] = (struct wbg_plan_target){ .dev = makedev(8, 2) };
		CHECK(plan_add_inode(&p, &k) == 1 && plan_add_inode(&p, &k) == 0 && p.t[0].n_inodes == 1,
		      "plan_add_inode: into its filesystem's per-inode target, once");
		k.dev = (8 << 20) | 2;
		CHECK(plan_add_inode(&p, &k) == 0 && p.t[1].n_inodes == 0, "a syncfs target covers it already");
		plan_free(&p);
	}

	/* evidence during the cleanup batch wins, and leaves the batch */
	setup(true);
	h = watched(8, "k/batch");
	id = h->id;
	advance(world.now + S + 1);
	CHECK(h->phase == WBG_PHASE_CLEANUP, "drained: on the cleanup batch");
	CHECK(lifecycle_evidence(&lc, 8, NULL, &owner) == 0 && world.n_sub == 1 && h->phase == WBG_PHASE_FLUSHING &&
		      lc.cleanup_head == NULL,
	      "evidence during the batch: flushed at once, off the batch");
	job_done(id, 0);
	advance(world.now + 2 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FLUSHED && world.cleanups == 1,
	      "then one cleanup and its end, flushed");
	teardown();
}

/* The node-wide cap on evidence flushes: five watched cgroups' evidence at
 * once, two a second: two flush now, the rest as the bucket refills. */
static void test_evidence_cap(void)
{
	const char *owner = NULL;
	char p[32];

	setup(true);
	lc.params.watch.evidence_per_sec = 2;
	for (uint64_t id = 21; id <= 25; id++) {
		world.wb_dirty[world.n_wb_dirty++] = id;
		snprintf(p, sizeof(p), "k/cap%u", (unsigned)id);
		(void)watched(id, p);
	}
	world.now += S;
	for (uint64_t id = 21; id <= 25; id++)
		(void)lifecycle_evidence(&lc, id, NULL, &owner);
	CHECK(world.n_sub == 2 && lc.watch_stats.evidence_capped == 3,
	      "five at once, two a second: two flushed, three put off and counted (%zu, %llu)", (size_t)world.n_sub,
	      (unsigned long long)lc.watch_stats.evidence_capped);
	advance(world.now + S);
	CHECK(world.n_sub == 4 && lc.n_watched == 5, "at the next tick, a second on: two more (%zu)", (size_t)world.n_sub);
	advance(world.now + S);
	CHECK(world.n_sub == 5, "and the last a second after (%zu)", (size_t)world.n_sub);
	teardown();
}

/* ... and a tenant's quarter of it: one tenant's evidence at once takes
 * its quarter, another tenant's still flushes now. */
static void test_evidence_tenant(void)
{
	const char *owner = NULL;
	char p[64];

	setup(true);
	lc.params.watch.evidence_per_sec = 8;
	for (uint64_t id = 31; id <= 36; id++) {
		world.wb_dirty[world.n_wb_dirty++] = id;
		snprintf(p, sizeof(p), "system.slice/noisy.service/c%u", (unsigned)id);
		(void)watched(id, p);
	}
	world.wb_dirty[world.n_wb_dirty++] = 40;
	(void)watched(40, "system.slice/quiet.service");
	world.now += S;
	for (uint64_t id = 31; id <= 36; id++)
		(void)lifecycle_evidence(&lc, id, NULL, &owner);
	CHECK(world.n_sub == 2 && lc.watch_stats.evidence_tenant_capped == 4,
	      "one tenant's six at once, 8 a second node-wide: its quarter (2) flushed, 4 put off and counted (%zu)",
	      (size_t)world.n_sub);
	(void)lifecycle_evidence(&lc, 40, NULL, &owner);
	CHECK(world.n_sub == 3, "another tenant's evidence flushes now (%zu)", (size_t)world.n_sub);
	teardown();
}

/* A flush that timed out and finishes later is its round's, not the
 * next round's: the next flush is not taken for done by it. */
static void test_late_job(void)
{
	struct wbg_handover *h;
	const char *owner;
	uint64_t first;

	setup(true);
	world.wb_dirty[world.n_wb_dirty++] = 5;
	h = watched(5, "k/late");
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	first = world.sub[world.n_sub - 1].waiter;
	advance(world.now + 31 * S);
	CHECK(world.timed_out == 1 && h->phase == WBG_PHASE_WATCHED, "its flush timed out: watched again (%s)",
	      wbg_phase_to_string(h->phase));
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	CHECK(h->phase == WBG_PHASE_FLUSHING && world.sub[world.n_sub - 1].waiter != first, "the next evidence: a new round");
	job_done_waiter(first, 0);
	CHECK(h->phase == WBG_PHASE_FLUSHING && lc.stats.late_jobs == 1,
	      "the timed-out round's job finishing now: not this round's, counted late (%s)",
	      wbg_phase_to_string(h->phase));
	job_done(h->id, 0);
	advance(world.now + S);
	CHECK(h->phase == WBG_PHASE_WATCHED, "this round's own job ends its flush");
	teardown();
}

static void test_max_age(void)
{
	struct wbg_handover *h;
	const char *owner;

	/* never flushed and never drained: flushed at max age */
	setup(true);
	world.wb_dirty[world.n_wb_dirty++] = 3;
	h = watched(3, "k/old");
	advance(world.now + 299 * S);
	CHECK(world.n_sub == 0, "not yet at 299 s");
	advance(world.now + 2 * S);
	CHECK(world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_HANDOVER && lc.watch_stats.expired == 1,
	      "at watch_max_age_sec: all of it flushed, counted");
	job_done(h->id, 0);
	advance(world.now + 3 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FLUSHED && lc.n_watched == 0 &&
		      strcmp(world.last_reason, "not drained at watch_max_age_sec: flushed") == 0,
	      "still dirty after that flush: given up, its slot free, the reason says why");
	CHECK(strstr(world.last_json, "\"dying_wb_clean\":false") && lc.watch_stats.ended[WBG_WATCH_END_DIRTY] == 1,
	      "recorded still dirty");
	teardown();

	/* flushed on evidence, then a slow writer keeps it dirty without ever
	 * stalling: max age ends that watch too */
	setup(true);
	world.wb_dirty[world.n_wb_dirty++] = 4;
	h = watched(4, "k/slow");
	(void)lifecycle_evidence(&lc, 4, NULL, &owner);
	job_done(h->id, 0);
	advance(world.now + 2 * S);
	CHECK(h->phase == WBG_PHASE_WATCHED && lc.n_watched == 1, "flushed, still dirty: watched again");
	advance(world.now + 310 * S);
	CHECK(world.ended == 1 && lc.n_watched == 0 && lc.watch_stats.ended[WBG_WATCH_END_DIRTY] == 1 && world.n_sub == 1,
	      "a flushed watch still dirty at watch_max_age_sec ends: a tenant's slow writer keeps no slot for good");
	teardown();
}

static void test_no_wbstats(void)
{
	struct wbg_handover *h;
	const char *owner;

	setup(true);
	world.no_wbstats = true;
	h = watched(4, "k/old-kernel");
	advance(world.now + 59 * S);
	CHECK(world.ended == 0 && world.cleanups == 0, "no wb_stats: not taken as drained before drain_after");
	advance(world.now + 3 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_DRAINED &&
		      strcmp(world.last_reason, "no wb_stats: taken as drained after one expiry") == 0 &&
		      !strstr(world.last_json, "dying_wb_clean"),
	      "after drain_after: cleaned up, ended unverified");
	teardown();

	/* flushed: watched for the stall until it stays quiet */
	setup(true);
	world.no_wbstats = true;
	h = watched(5, "k/stalled");
	world.now += S;
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	job_done(h->id, 0);
	advance(world.now + S);
	CHECK(world.ended == 0 && h->phase == WBG_PHASE_WATCHED && world.last_arm_stall_only,
	      "flushed, and nothing can say whether it ended: watched for the stall only");
	world.now += S;
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	CHECK(world.n_sub == 2, "the stall again: flushed again");
	job_done(h->id, 0);
	advance(world.now + S);
	advance(world.now + LC_QUIET_USEC - 2 * S);
	CHECK(world.ended == 0, "not yet quiet");
	advance(world.now + 4 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FLUSHED && lc.watch_stats.ended[WBG_WATCH_END_FLUSHED] == 1,
	      "quiet for LC_QUIET_USEC: ended flushed");
	teardown();
}

static void test_bounds(void)
{
	struct wbg_handover *h;

	setup(true);
	lc.params.watch.max = 2;
	(void)watched(1, "k/one");
	(void)watched(2, "k/two");
	(void)watched(3, "k/three");
	CHECK(lc.n_watched == 2 && lc.watch_share.refused[WBG_SHARE_FULL] == 1 && world.n_sub == 1 &&
		      world.sub[0].purpose == FLUSH_FOR_HANDOVER,
	      "a removal past watch_max: refused, counted, flushed at once as eager");
	lifecycle_released(&lc, 2);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_DRAINED && lc.n_watched == 1 &&
		      strstr(world.last_json, "\"dying_wb_clean\":true") && lc.watch_stats.ended[WBG_WATCH_END_DROPPED] == 1,
	      "released by the kernel: its wbs are gone, ended clean, counted dropped");
	teardown();

	/* one tenant's share: a delegated subtree churning cgroups below one
	 * service cannot take every slot */
	setup(true);
	lc.params.watch.max_per_tenant = 2;
	(void)watched(11, "system.slice/tenant.service/a");
	(void)watched(12, "system.slice/tenant.service/b/c");
	(void)watched(13, "system.slice/tenant.service/d");
	(void)watched(14, "system.slice/other.service");
	CHECK(lc.n_watched == 3 && lc.watch_share.refused[WBG_SHARE_TENANT] == 1 && lc.watch_share.refused[WBG_SHARE_FULL] == 0 &&
		      world.n_sub == 1,
	      "a tenant past watch_max_per_tenant: its third removal flushed at once, counted; another tenant still watched");
	teardown();

	/* a few tenants together cannot take every slot either: 16 slots are
	 * floors of 1 for 8 tenants and a pool of 8 */
	setup(true);
	for (int i = 0; i < 12; i++) {
		char p[64];

		snprintf(p, sizeof(p), "system.slice/a.service/c%d", i);
		(void)watched(100 + i, p);
	}
	(void)watched(200, "system.slice/b.service");
	CHECK(lc.n_watched == 10 && lc.watch_share.refused[WBG_SHARE_POOL] == 3 && lifecycle_watching(&lc, 200),
	      "one tenant's 12 removals: 1 + 8 pooled watched, 3 refused for the pool; the next tenant's floor (%zu)",
	      lc.n_watched);
	lifecycle_released(&lc, 105);
	(void)watched(201, "system.slice/b.service/more");
	CHECK(lifecycle_watching(&lc, 201) && lc.watch_share.pooled == 8,
	      "a's release gives its pooled slot back, which b's second removal takes");
	teardown();
	{
		struct wbg_identity a, b, c, d;

		cgroup_identity_parse("kubepods.slice/kubepods-burstable.slice/"
				      "kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-1.scope", &a);
		cgroup_identity_parse("kubepods.slice/kubepods-burstable.slice/"
				      "kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-1.scope/x/y", &b);
		cgroup_identity_parse("user.slice/user-1000.slice/user@1000.service/app.slice/a.scope", &c);
		cgroup_identity_parse("user.slice/user-1000.slice/user@1000.service/app.slice/b.scope", &d);
		CHECK(handover_tenant("p1", &a) == handover_tenant("p2", &b) &&
			      handover_tenant("user.slice/user-1000.slice/user@1000.service/app.slice/a.scope", &c) ==
				      handover_tenant("user.slice/user-1000.slice/user@1000.service/app.slice/b.scope", &d) &&
			      handover_tenant("system.slice/a.service/x", &d) != handover_tenant("system.slice/b.service", &d),
		      "tenants: a pod (whatever its container creates below), a user's manager, a service's subtree");
	}

	setup(true);
	world.plan_result = 0;
	h = watched(6, "k/cannot");
	world.plan_targets = 0;
	world.mount_targets = 0;
	{
		const char *owner;

		(void)lifecycle_evidence(&lc, 6, NULL, &owner);
	}
	CHECK(h->phase == WBG_PHASE_CLEANUP && world.n_sub == 0, "an evidence flush with nothing to write: on to the cleanup");
	teardown();
}

static void test_flush_requests(void)
{
	struct wbg_cgroup *c;
	struct wbg_handover *h;
	const char *owner;

	setup(true);
	c = cgroup(40, "k/pod/ctr");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[1]) == 1 && world.replies[1] == 1 &&
		      strcmp(world.reply_outcome[1], "watched") == 0 && lc.n_waiters == 0,
	      "poststop of an emptied container on-evidence: answered at once, watched (no 5 s wait)");
	h = c->handover;
	removed(c);
	CHECK(lifecycle_flush_request(&lc, NULL, "k/pod/ctr", 5 * S, &world.calls[2]) == 1 && world.replies[2] == 1 &&
		      strcmp(world.reply_outcome[2], "watched") == 0 && world.reply_id[2] == h->id,
	      "after its removal (runtimes rmdir before poststop): watched, at once");
	world.now += S;
	(void)lifecycle_evidence(&lc, 40, NULL, &owner);
	CHECK(lifecycle_flush_request(&lc, NULL, "k/pod/ctr", 5 * S, &world.calls[3]) == 1 && world.replies[3] == 0 &&
		      lc.n_waiters == 1,
	      "while its evidence flush runs: waited for");
	job_done(h->id, 0);
	CHECK(world.replies[3] == 1 && strcmp(world.reply_outcome[3], "flushed") == 0, "answered when that flush ends");
	teardown();

	/* eager: waited for, as before */
	setup(false);
	c = cgroup(41, "k/eager");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[4]) == 1 && world.replies[4] == 0,
	      "eager: poststop waits for the flush");
	job_done(c->handover->id, 0);
	CHECK(world.replies[4] == 1 && strcmp(world.reply_outcome[4], "flushed") == 0, "and gets it");
	teardown();
}

static void test_stop_keeps(void)
{
	setup(true);
	(void)watched(50, "k/w");
	world.ended = 0;
	lifecycle_stop(&lc);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_INTERRUPTED && world.pending_saves == 1 &&
		      world.pending_drops == 0,
	      "stopping while watched: interrupted, its pending record (saved when it was deferred) kept");
	CHECK(lc.watch_stats.ended[WBG_WATCH_END_DROPPED] == 1 && world.disarmed == 1, "disarmed, counted dropped");
	registry_free(&reg);
}

/* Stopped while its cleanup or its verification runs: the watch's pending
 * record stays for the next start, which finds the dying wb's data if the
 * cleanup had not moved it (it used to be dropped). */
static void test_stop_in_cleanup(void)
{
	for (int verify = 0; verify < 2; verify++) {
		struct wbg_handover *h;

		setup(true);
		world.wb_dirty[world.n_wb_dirty++] = 51;
		h = watched(51, "k/c");
		world.n_wb_dirty = 0;
		for (int i = 0; i < 100 && h->phase != (verify ? WBG_PHASE_VERIFY : WBG_PHASE_CLEANUP); i++)
			advance(world.now + S / 20);
		CHECK(h->phase == (verify ? WBG_PHASE_VERIFY : WBG_PHASE_CLEANUP), "drained: in its %s",
		      verify ? "verification" : "cleanup");
		lifecycle_stop(&lc);
		CHECK(world.pending_saves == 1 && world.pending_drops == 0,
		      "stopped there: its pending record kept for the next start");
		registry_free(&reg);
	}
}

static void test_boost(void)
{
	struct wbg_handover h = { .outcome = WBG_OUTCOME_FLUSHED, .verify = 0 };
	struct boost_limit l = { 0 };
	unsigned ok = 0;

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
	CHECK(handover_wants_boost(&h, false) && !handover_wants_boost(&h, true),
	      "[flush] enable = no: the boost is all there is");

	for (unsigned i = 0; i < 10; i++)
		ok += boost_limit_take(&l, 42, 1000 + i);
	CHECK(ok == BOOST_LIMIT_BURST && l.refused == 10 - BOOST_LIMIT_BURST,
	      "one tenant failing flushes again and again: %u boosts, the rest refused and counted", ok);
	CHECK(boost_limit_take(&l, 43, 2000), "another tenant still boosts");
	CHECK(!boost_limit_take(&l, 42, 1000 + BOOST_LIMIT_REFILL_USEC - 1) &&
		      boost_limit_take(&l, 42, 1000 + BOOST_LIMIT_REFILL_USEC) &&
		      !boost_limit_take(&l, 42, 1001 + BOOST_LIMIT_REFILL_USEC),
	      "one more per refill period");
	for (uint64_t t = 100; t < 100 + BOOST_LIMIT_TENANTS; t++)
		(void)boost_limit_take(&l, t, 5000 + t);
	CHECK(l.evicted >= 2, "more tenants than the table: the least recently seen make room (counted)");
}

static void test_stall(void)
{
	struct wbg_handover *h;
	unsigned disarmed;
	int started = 0, capped = 0;

	setup(true);
	lc.mitigating = false;
	CHECK(lifecycle_stall(&lc, 90, "", makedev(253, 0), true) == 0 && lc.n_active == 0 && lc.stats.stall_off == 1,
	      "a stall while not mitigating: nothing started, counted");
	lc.mitigating = true;
	world.plan_targets = 0; /* wbguardd was down at its removal: BPF has nothing of it */
	CHECK(lifecycle_stall(&lc, 90, "k/gone", makedev(253, 0), true) == 1 && lc.n_active == 1 && lc.n_watched == 1,
	      "a stall nothing covered: a handover, watched like any removal on-evidence");
	h = lc.watched[0];
	CHECK(h->trigger == WBG_TRIGGER_STALL && h->phase == WBG_PHASE_FLUSHING && world.n_sub == 1 &&
		      world.sub[0].dev == makedev(253, 0) && h->evidence == 1,
	      "flushed at once: the stalled device's filesystem (the stall is its evidence)");
	CHECK(lifecycle_stall(&lc, 90, "k/gone", makedev(253, 0), true) == 0 && lc.stats.stall_covered == 1 && world.n_sub == 1,
	      "reported again while its handover runs: covered, counted, nothing more");
	disarmed = world.disarmed;
	job_done(h->id, 0);
	advance(world.now + 2 * S);
	CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_STALL && world.last_outcome == WBG_OUTCOME_FLUSHED &&
		      world.disarmed == disarmed + 1,
	      "flushed, cleaned up, clean: recorded (trigger stall), and BPF may report its next stall");
	teardown();

	/* nothing to flush on the stalled device (no filesystem of it here):
	 * ended, and BPF keeps it reported, so its next failed flushes do not
	 * each start another */
	setup(true);
	world.plan_targets = 0;
	world.recorded_targets = 0;
	disarmed = world.disarmed;
	CHECK(lifecycle_stall(&lc, 95, "", makedev(7, 7), true) == 1 && world.ended == 1 && world.last_outcome == WBG_OUTCOME_NO_TARGETS &&
		      world.disarmed == disarmed,
	      "a stall with nothing to flush: recorded no-targets, and not reported again at every failed flush");
	teardown();

	/* a cgroup whose removal is watched: its own arming covers it */
	setup(true);
	(void)watched(91, "k/watched");
	CHECK(lifecycle_stall(&lc, 91, "k/watched", makedev(253, 0), true) == 0 && lc.stats.stall_covered == 1 &&
		      world.n_sub == 0,
	      "a stall of a watched cgroup: covered, no second handover");
	teardown();

	/* a rate per device */
	setup(true);
	world.plan_targets = 0;
	for (uint64_t id = 100; id < 120; id++) {
		int r = lifecycle_stall(&lc, id, "", makedev(253, 0), true);

		started += r == 1;
		capped += r == -EBUSY;
	}
	CHECK(started == 16 && capped == 4 && lc.stats.stall_capped == 4,
	      "20 stalls on one device at once: 16 started, 4 refused and counted");
	CHECK(lifecycle_stall(&lc, 200, "", makedev(8, 0), true) == 1, "another device still has its own");
	world.now += S;
	CHECK(lifecycle_stall(&lc, 120, "", makedev(253, 0), true) == 1, "a second later the device has room again");
	teardown();

	/* one tenant's share of a device's: 4 of its stalls at once, and the
	 * others' still start; a capped one is reported again a second later,
	 * not at each failed flush */
	setup(true);
	world.plan_targets = 0;
	started = capped = 0;
	disarmed = world.disarmed;
	for (uint64_t id = 300; id < 310; id++) {
		char p[64];
		int r;

		snprintf(p, sizeof(p), "system.slice/noisy.service/c%d", (int)id);
		r = lifecycle_stall(&lc, id, p, makedev(253, 0), true);
		started += r == 1;
		capped += r == -EBUSY;
	}
	CHECK(started == 4 && capped == 6 && lc.stats.stall_tenant_capped == 6 && world.disarmed == disarmed,
	      "10 stalls of one tenant: 4 started, 6 refused for its share, none re-armed yet (%d, %d)", started,
	      capped);
	CHECK(lifecycle_stall(&lc, 320, "system.slice/quiet.service", makedev(253, 0), true) == 1,
	      "another tenant's stall on that device starts");
	advance(world.now + S + S / 10);
	CHECK(world.disarmed >= disarmed + 6, "a second later the 6 refused are re-armed (reported again at their next stall)");
	{
		/* more capped than the retry FIFO holds: the rest re-armed at
		 * once, counted */
		unsigned before = world.disarmed;

		for (uint64_t id = 1000; id < 1000 + 16 + 256 + 10; id++)
			(void)lifecycle_stall(&lc, id, "", makedev(9, 9), true);
		CHECK(lc.stats.stall_retry_full == 10 && world.disarmed == before + 10,
		      "16 started, 256 wait in the FIFO, the 10 past it re-armed at once and counted (%llu)",
		      (unsigned long long)lc.stats.stall_retry_full);
		advance(world.now + 2 * S);
	}
	CHECK(lifecycle_stall(&lc, 400, "outside/x.service", makedev(253, 0), false) == 0 &&
		      lc.stats.stall_out_of_scope == 1 && !lifecycle_cgroup_active(&lc, 400),
	      "a stall outside [daemon] roots: nothing started, counted");
	teardown();

	/* the stall's flush is evidence like any: the node-wide cap applies */
	setup(true);
	world.plan_targets = 0;
	lc.params.watch.evidence_per_sec = 2;
	for (uint64_t id = 500; id < 504; id++)
		(void)lifecycle_stall(&lc, id, "", makedev(253, 0), true);
	CHECK(world.n_sub == 2 && lc.watch_stats.evidence_capped == 2,
	      "4 stalls at once with a cap of 2 a second: 2 flushed now, 2 put off and counted (%zu flushes)",
	      (size_t)world.n_sub);
	teardown();
}

int main(void)
{
	if (world_open() < 0)
		return 1;
	test_drain();
	test_evidence();
	test_evidence_cap();
	test_evidence_tenant();
	test_max_age();
	test_late_job();
	test_no_wbstats();
	test_bounds();
	test_flush_requests();
	test_stop_keeps();
	test_stop_in_cleanup();
	test_boost();
	test_stall();
	world_close();
	return tap_done();
}
