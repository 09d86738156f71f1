/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The on-evidence watch (lifecycle-watch.c) in the lifecycle, against the
 * pretend world: drains, evidence, reflush timing, max age, the kernels
 * without wb_stats, the table's bound, releases, and what a caller asking
 * for a flush of a watched handover gets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle-internal.h"
#include "lifecycle-world.h"
#include "tap.h"

static void test_drain(void)
{
	struct wbg_handover *h;

	setup(true);
	dying_wb_dirty(5);
	h = watched(5, "k/drain");
	CHECK(h && h->phase == WBG_PHASE_WATCHED, "a removal with dirty data is watched");
	CHECK(world.armed == 1 && world.last_armed == 5, "a removal with dirty data: BPF armed for it");
	CHECK(!world.last_arm_stall_only, "a removal with dirty data: armed for either sign");
	advance(world.now + 3 * S);
	CHECK(world.ended == 0, "still dirty: not ended");
	CHECK(world.cleanups == 0, "still dirty: no cleanup");
	CHECK(world.n_sub == 0, "still dirty: no I/O");
	world.n_wb_dirty = 0;
	advance(world.now + 2 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_DRAINED), "drained: ended drained");
	CHECK(world.cleanups == 1, "drained: one cleanup cycle");
	CHECK(world.n_sub == 0, "drained: without a flush");
	CHECK(world_json_bool("cleanup_rerun") == 1, "its record says the cleanup was re-run");
	CHECK(world_json_bool("dying_wb_clean") == 1, "its record says the dying wb was verified clean");
	CHECK(world_json_int("evidence") == 0, "its record counts no evidence");
	CHECK(world.disarmed == 1, "drained: disarmed");
	CHECK(world.forgotten == 1, "drained: its BPF set forgotten");
	CHECK(lc.watch.n == 0, "drained: out of the table");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_DRAINED] == 1, "drained: counted as drained");
	CHECK(world_json_string_is("watch_ended", "moved"), "its record: off wb_stats' list, the inodes moved");
	teardown();
}

static void test_evidence(void)
{
	struct wbg_handover *h;
	const char *owner = NULL;
	uint64_t id;

	setup(true);
	dying_wb_dirty(7);
	h = watched(7, "k/ev");
	id = h->id;
	world.now += S;
	CHECK(lifecycle_evidence(&lc, 7, NULL, &owner) == 0, "evidence for a watched cgroup is taken");
	CHECK(world.n_sub == 1 && h->phase == WBG_PHASE_FLUSHING, "evidence: flushed at once");
	CHECK(world.sub[0].purpose == FLUSH_FOR_EVIDENCE, "evidence: its own inodes, evidence mode");
	CHECK(lifecycle_evidence(&lc, 7, NULL, &owner) == 1 && h->evidence_pending, "more evidence while it runs: noted");
	CHECK(world.n_sub == 1, "more evidence while it runs: no second flush");
	CHECK(lifecycle_evidence(&lc, 9, NULL, &owner) == -ENOENT, "evidence for a cgroup not watched: -ENOENT");
	CHECK(lc.watch.stats.evidence_ignored == 1, "evidence for a cgroup not watched: counted");
	job_done(id, 0);
	CHECK(h->phase == WBG_PHASE_CLEANUP, "its flush done: the cleanup next");
	CHECK(world.last_arm_stall_only, "its flush done: armed for the stall only");
	advance(world.now + S / 10);
	CHECK(world.n_sub == 1 && h->phase == WBG_PHASE_VERIFY, "the noted evidence waits reflush_sec");
	advance(world.now + S / 2);
	CHECK(world.n_sub == 2 && h->phase == WBG_PHASE_FLUSHING, "then flushes again (still dirty)");
	job_done(id, 0);
	advance(world.now + S / 2);
	CHECK(world.ended == 0 && h->phase == WBG_PHASE_WATCHED, "still dirty after the cleanup: watched again");
	CHECK(world.last_arm_stall_only, "still dirty after the cleanup: armed for the stall only");
	world.n_wb_dirty = 0;
	advance(world.now + 3 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "drained after that: ended flushed");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_FLUSHED] == 1, "drained after that: the watch counted as flushed");
	CHECK(world_json_int("evidence") == 2, "its record counts its evidence");
	CHECK(world_json_int("evidence_flushes") == 2, "its record counts its evidence flushes");
	CHECK(world_json_int("targets") == 1, "its two flushes of one filesystem: one target in its record");
	teardown();

	/* the inode the evidence named is written even when the record the
	 * plan comes from lost it (LRU) */
	setup(true);
	world.plan_uses_inodes = true;
	h = watched(9, "k/lost");
	{
		struct wbg_inode_key k = { .cgroup_id = 9, .ino = 4242, .dev = (253 << 20) | 0, .gen = 7 };

		CHECK(lifecycle_evidence(&lc, 9, &k, &owner) == 0 && world.n_sub == 1, "evidence naming an inode: flushed");
		CHECK(world.sub[0].n_inodes == 1 && world.sub[0].first_ino == 4242, "the evidence's own inode is in its flush");
		CHECK(lc_plan_stats(&lc)->evidence_inodes_added == 1, "the evidence's inode added to the plan is counted");
	}
	teardown();
	{
		struct wbg_plan p = { 0 };
		struct wbg_inode_key k = { .ino = 5, .dev = (8 << 20) | 1 };

		p.t = calloc(2, sizeof(*p.t));
		p.t[p.n++] = (struct wbg_plan_target){ .dev = makedev(8, 1), .use_inodes = true };
		p.t[p.n++] = (struct wbg_plan_target){ .dev = makedev(8, 2) };
		CHECK(plan_add_inode(&p, &k) == 1, "plan_add_inode: into its filesystem's per-inode target");
		CHECK(plan_add_inode(&p, &k) == 0 && p.t[0].n_inodes == 1, "plan_add_inode: the same inode once");
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
	CHECK(lifecycle_evidence(&lc, 8, NULL, &owner) == 0 && world.n_sub == 1 && h->phase == WBG_PHASE_FLUSHING,
	      "evidence during the batch: flushed at once");
	CHECK(lc.cleanup_head == NULL, "evidence during the batch: off the batch");
	job_done(id, 0);
	advance(world.now + 2 * S);
	CHECK(world.cleanups == 1, "then one cleanup");
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "then its end, flushed");
	teardown();
}

/* Cgroups first..last, named prefix<id>, removed with their dying wbs
 * dirty: watched. */
static void watch_dirty(uint64_t first, uint64_t last, const char *prefix)
{
	for (uint64_t id = first; id <= last; id++) {
		char p[64];

		snprintf(p, sizeof(p), "%s%u", prefix, (unsigned)id);
		dying_wb_dirty(id);
		(void)watched(id, p);
	}
}

/* Evidence for each of cgroups first..last, at once. */
static void evidence_for(uint64_t first, uint64_t last)
{
	const char *owner;

	for (uint64_t id = first; id <= last; id++)
		(void)lifecycle_evidence(&lc, id, NULL, &owner);
}

/* The node-wide cap on evidence flushes: five watched cgroups' evidence at
 * once, two a second: two flush now, the rest as the bucket refills. */
static void test_evidence_cap(void)
{
	setup(true);
	lc.params.watch.evidence_per_sec = 2;
	watch_dirty(21, 25, "k/cap");
	world.now += S;
	evidence_for(21, 25);
	CHECK(world.n_sub == 2, "five at once, two a second: two flushed (%zu)", (size_t)world.n_sub);
	CHECK(lc.watch.stats.evidence_capped == 3, "five at once, two a second: three put off and counted (%llu)",
	      (unsigned long long)lc.watch.stats.evidence_capped);
	advance(world.now + S);
	CHECK(world.n_sub == 4, "at the next tick, a second on: two more (%zu)", (size_t)world.n_sub);
	CHECK(lc.watch.n == 5, "the put-off ones stay watched");
	advance(world.now + S);
	CHECK(world.n_sub == 5, "and the last a second after (%zu)", (size_t)world.n_sub);
	teardown();
}

/* ... and a tenant's quarter of it: one tenant's evidence at once takes
 * its quarter, another tenant's still flushes now. */
static void test_evidence_tenant(void)
{
	const char *owner = NULL;

	setup(true);
	lc.params.watch.evidence_per_sec = 8;
	watch_dirty(31, 36, "system.slice/noisy.service/c");
	dying_wb_dirty(40);
	(void)watched(40, "system.slice/quiet.service");
	world.now += S;
	evidence_for(31, 36);
	CHECK(world.n_sub == 2, "one tenant's six at once, 8 a second node-wide: its quarter (2) flushed (%zu)",
	      (size_t)world.n_sub);
	CHECK(lc.watch.stats.evidence_tenant_capped == 4, "one tenant's six at once: 4 put off and counted");
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
	dying_wb_dirty(5);
	h = watched(5, "k/late");
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	first = world.sub[world.n_sub - 1].waiter;
	advance(world.now + 31 * S);
	CHECK(world.timed_out == 1, "its flush timed out");
	CHECK(h->phase == WBG_PHASE_WATCHED, "its flush timed out: watched again (%s)", wbg_phase_to_string(h->phase));
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	CHECK(h->phase == WBG_PHASE_FLUSHING && world.sub[world.n_sub - 1].waiter != first, "the next evidence: a new round");
	job_done_waiter(first, 0);
	CHECK(h->phase == WBG_PHASE_FLUSHING, "the timed-out round's job finishing now: not this round's (%s)",
	      wbg_phase_to_string(h->phase));
	CHECK(lc_engine_stats(&lc)->late_jobs == 1, "the timed-out round's job: counted late");
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
	dying_wb_dirty(3);
	h = watched(3, "k/old");
	advance(world.now + 299 * S);
	CHECK(world.n_sub == 0, "not yet at 299 s");
	advance(world.now + 2 * S);
	CHECK(world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_HANDOVER, "at watch_max_age_sec: all of it flushed");
	CHECK(lc.watch.stats.expired == 1, "at watch_max_age_sec: counted");
	job_done(h->id, 0);
	advance(world.now + 3 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "still dirty after that flush: given up, flushed");
	CHECK(lc.watch.n == 0, "given up: its slot free");
	CHECK(strcmp(world.last_reason, "not drained at watch_max_age_sec: flushed") == 0, "given up: the reason says why");
	CHECK(world_json_bool("dying_wb_clean") == 0, "the record says the dying wb was still dirty");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_DIRTY] == 1, "the watch counted as ended dirty");
	teardown();

	/* flushed on evidence, then a slow writer keeps it dirty without ever
	 * stalling: max age ends that watch too */
	setup(true);
	dying_wb_dirty(4);
	h = watched(4, "k/slow");
	(void)lifecycle_evidence(&lc, 4, NULL, &owner);
	job_done(h->id, 0);
	advance(world.now + 2 * S);
	CHECK(h->phase == WBG_PHASE_WATCHED && lc.watch.n == 1, "flushed, still dirty: watched again");
	advance(world.now + 310 * S);
	CHECK(world.ended == 1 && lc.watch.n == 0,
	      "a flushed watch still dirty at watch_max_age_sec ends: a tenant's slow writer keeps no slot for good");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_DIRTY] == 1, "... counted as ended dirty");
	CHECK(world.n_sub == 1, "... with no flush beyond the evidence's");
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
	CHECK(world_recorded(1, WBG_OUTCOME_DRAINED), "no wb_stats, after drain_after: drained");
	CHECK(strcmp(world.last_reason, "no wb_stats: taken as drained after one expiry") == 0,
	      "no wb_stats: the reason says it was taken as drained");
	CHECK(!world_json_has("dying_wb_clean"), "no wb_stats: the record says nothing of the dying wb (unverified)");
	teardown();

	/* flushed: watched for the stall until it stays quiet */
	setup(true);
	world.no_wbstats = true;
	h = watched(5, "k/stalled");
	world.now += S;
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	job_done(h->id, 0);
	advance(world.now + S);
	CHECK(world.ended == 0 && h->phase == WBG_PHASE_WATCHED, "flushed, and nothing can say whether it ended: watched");
	CHECK(world.last_arm_stall_only, "flushed, and nothing can say whether it ended: armed for the stall only");
	world.now += S;
	(void)lifecycle_evidence(&lc, 5, NULL, &owner);
	CHECK(world.n_sub == 2, "the stall again: flushed again");
	job_done(h->id, 0);
	advance(world.now + S);
	advance(world.now + LC_QUIET_USEC - 2 * S);
	CHECK(world.ended == 0, "not yet quiet");
	advance(world.now + 4 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "quiet for LC_QUIET_USEC: ended flushed");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_FLUSHED] == 1, "quiet for LC_QUIET_USEC: the watch counted as flushed");
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
	CHECK(lc.watch.n == 2, "a removal past watch_max: not watched");
	CHECK(lc.watch.share.refused[WBG_SHARE_FULL] == 1, "a removal past watch_max: the refusal counted");
	CHECK(world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_HANDOVER, "a removal past watch_max: flushed at once as eager");
	lifecycle_released(&lc, 2);
	CHECK(world_recorded(1, WBG_OUTCOME_DRAINED), "released by the kernel: its wbs are gone, drained");
	CHECK(lc.watch.n == 1, "released by the kernel: out of the table");
	CHECK(world_json_bool("dying_wb_clean") == 1, "released by the kernel: recorded clean");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_DROPPED] == 1, "released by the kernel: counted dropped");
	teardown();

	/* one tenant's share: a delegated subtree churning cgroups below one
	 * service cannot take every slot */
	setup(true);
	lc.params.watch.max_per_tenant = 2;
	(void)watched(11, "system.slice/tenant.service/a");
	(void)watched(12, "system.slice/tenant.service/b/c");
	(void)watched(13, "system.slice/tenant.service/d");
	(void)watched(14, "system.slice/other.service");
	CHECK(world.n_sub == 1, "a tenant past watch_max_per_tenant: its third removal flushed at once");
	CHECK(lc.watch.share.refused[WBG_SHARE_TENANT] == 1 && lc.watch.share.refused[WBG_SHARE_FULL] == 0,
	      "a tenant past watch_max_per_tenant: counted as the tenant's share, not the table's");
	CHECK(lc.watch.n == 3, "a tenant past watch_max_per_tenant: another tenant still watched");
	teardown();

	/* a pod's container that names cgroups below its own after pods (any
	 * uid) is still its pod's one tenant: its third removal is past the
	 * share */
	setup(true);
	lc.params.watch.max_per_tenant = 2;
	for (int i = 0; i < 3; i++) {
		char p[256];

		snprintf(p, sizeof(p),
			 "kubepods/burstable/pod6b9c4b2e-1f3a-4c5d-9e8f-0a1b2c3d4e5f/3f2a9c1d7e6b5a4f/pod%08d-0000-4000-8000-00000000000%d",
			 i, i);
		(void)watched(21 + i, p);
	}
	CHECK(world.n_sub == 1 && lc.watch.share.refused[WBG_SHARE_TENANT] == 1,
	      "nested cgroups named after pods below a container: one tenant, its third removal past its share");
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
	CHECK(lc.watch.n == 10, "one tenant's 12 removals: 1 + 8 pooled watched, and the next tenant's (%zu)", lc.watch.n);
	CHECK(lc.watch.share.refused[WBG_SHARE_POOL] == 3, "one tenant's 12 removals: 3 refused for the pool");
	CHECK(lifecycle_watching(&lc, 200), "the next tenant's removal: watched on its floor");
	lifecycle_released(&lc, 105);
	(void)watched(201, "system.slice/b.service/more");
	CHECK(lifecycle_watching(&lc, 201), "a's release gives its pooled slot back, which b's second removal takes");
	CHECK(lc.watch.share.pooled == 8, "the pool's slots all taken again");
	teardown();
	{
		static const char *pod = "kubepods.slice/kubepods-burstable.slice/"
					 "kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-1.scope";
		char nested[512];

		snprintf(nested, sizeof(nested), "%s/kubepods-burstable-pod11111111_2222_4333_8444_555555555555.slice/y",
			 pod);
		CHECK(handover_tenant(pod) == handover_tenant(nested),
		      "tenants: a pod, whatever its container creates below (a cgroup named after another pod included)");
		CHECK(handover_tenant("user.slice/user-1000.slice/user@1000.service/app.slice/a.scope") ==
			      handover_tenant("user.slice/user-1000.slice/user@1000.service/app.slice/b.scope"),
		      "tenants: a user's manager");
		CHECK(handover_tenant("system.slice/a.service/x") != handover_tenant("system.slice/b.service"),
		      "tenants: a service's subtree, not another service's");
		CHECK(handover_tenant("system.slice/a.service/pod11111111-2222-4333-8444-555555555555") ==
			      handover_tenant("system.slice/a.service"),
		      "tenants: a service's cgroup named after a pod is its service's");
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
	CHECK(world.n_sub == 0, "an evidence flush with nothing to write: nothing submitted");
	CHECK(h->phase == WBG_PHASE_CLEANUP, "an evidence flush with nothing to write: on to the cleanup");
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
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[1]) == 1 && world.replies[1] == 1,
	      "poststop of an emptied container on-evidence: answered at once (no 5 s wait)");
	CHECK(strcmp(world.reply_outcome[1], "watched") == 0, "poststop of an emptied container on-evidence: watched");
	CHECK(lc.waiters.n == 0, "poststop of an emptied container on-evidence: nobody waits");
	h = c->handover;
	removed(c);
	CHECK(lifecycle_flush_request(&lc, NULL, "k/pod/ctr", 5 * S, &world.calls[2]) == 1 && world.replies[2] == 1,
	      "after its removal (runtimes rmdir before poststop): answered at once");
	CHECK(strcmp(world.reply_outcome[2], "watched") == 0 && world.reply_id[2] == h->id,
	      "after its removal: watched, its handover's id");
	world.now += S;
	(void)lifecycle_evidence(&lc, 40, NULL, &owner);
	CHECK(lifecycle_flush_request(&lc, NULL, "k/pod/ctr", 5 * S, &world.calls[3]) == 1 && world.replies[3] == 0,
	      "while its evidence flush runs: not answered yet");
	CHECK(lc.waiters.n == 1, "while its evidence flush runs: waited for");
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
	CHECK(world_recorded(1, WBG_OUTCOME_INTERRUPTED), "stopping while watched: interrupted");
	CHECK(world.pending_saves == 1 && world.pending_drops == 0,
	      "stopping while watched: its pending record (saved when it was deferred) kept");
	CHECK(world.disarmed == 1, "stopping while watched: disarmed");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_DROPPED] == 1, "stopping while watched: counted dropped");
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
		dying_wb_dirty(51);
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

/* A flush and the cleanup leave the dying wb clean but still listed in
 * wb_stats: inodes still attached to it (a writer kept dirtying them while
 * the kernel's cleanup ran). The watch goes on, the cleanup re-run after
 * drain_after, until the wb is off the list; the record says it ended
 * because the kernel moved them. At max age without that: ended, said. */
static void test_attached(void)
{
	for (int moved = 0; moved < 2; moved++) {
		struct wbg_handover *h;
		const char *owner = NULL;
		uint64_t id;

		setup(true);
		dying_wb_dirty(61);
		h = watched(61, "k/att");
		id = h->id;
		world.now += S;
		CHECK(lifecycle_evidence(&lc, 61, NULL, &owner) == 0 && world.n_sub == 1, "evidence: flushed");
		world.n_wb_dirty = 0;
		world.wb_listed[0] = 61;
		world.n_wb_listed = 1;
		job_done(id, 0);
		advance(world.now + 2 * S);
		CHECK(world.ended == 0 && h->phase == WBG_PHASE_WATCHED,
		      "clean but its wb still listed after the cleanup: watched again, not ended");
		CHECK(world.cleanups == 1, "one cleanup so far");
		advance(world.now + 30 * S);
		CHECK(world.cleanups == 1 && world.ended == 0, "clean and listed: no second cleanup before drain_after");
		if (moved) {
			advance(world.now + 31 * S);
			CHECK(world.cleanups == 2, "after drain_after: the cleanup again");
			world.n_wb_listed = 0;
			advance(world.now + 61 * S);
			CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "off the list: ended, flushed");
			CHECK(world_json_string_is("watch_ended", "moved"), "its record: the kernel moved its inodes");
			CHECK(world_json_bool("dying_wb_clean") == 1, "its record: clean");
		} else {
			for (int i = 0; i < 12 && !world.ended; i++)
				advance(world.now + 30 * S);
			CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "still listed at max age: ended");
			CHECK(world_json_string_is("watch_ended", "max_age_attached"),
			      "its record: ended at max age with inodes still attached");
			CHECK(world.cleanups >= 3 && world.cleanups <= 7, "a cleanup every drain_after meanwhile (%u)",
			      world.cleanups);
		}
		CHECK(lc.watch.n == 0, "out of the table");
		teardown();
	}
}

WORLD_MAIN(test_attached, test_drain, test_evidence, test_evidence_cap, test_evidence_tenant, test_max_age,
	   test_late_job, test_no_wbstats, test_bounds, test_flush_requests, test_stop_keeps,
	   test_stop_in_cleanup)
