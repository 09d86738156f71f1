/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle (lifecycle.h) against a pretend world: a clock
 * the test moves, a pool whose jobs end when the test says, memory.stat
 * and wb_stats as the test sets them, and the records, replies and state
 * dir calls it sees. Each check is one behaviour; the record is read as
 * JSON, field by field. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lifecycle-internal.h"
#include "lifecycle-world.h"
#include "tap.h"

static void test_eager(void)
{
	struct wbg_cgroup *a, *b;
	uint64_t ida;

	setup(false);
	a = cgroup(100, "kubepods/a");
	b = cgroup(101, "kubepods/b");
	ida = lifecycle_event(&lc, a, WBG_TRIGGER_POPULATED_0);
	CHECK(ida > 0, "eager: populated 0 with dirty data starts a handover");
	CHECK(world.n_sub == 1 && world.sub[0].id == ida, "eager: its plan is submitted at once");
	CHECK(world.sub[0].purpose == FLUSH_FOR_HANDOVER, "eager: as a handover's flush");
	CHECK(world.pending_saves == 1, "eager: its pending record is saved while the flush runs");
	CHECK(lifecycle_n_active(&lc) == 1, "eager: the handover is active while the flush runs");
	CHECK(world.scheduled == world.now + 30 * S, "eager: the one timer is due at its flush timeout");
	(void)lifecycle_event(&lc, b, WBG_TRIGGER_POPULATED_0);
	job_done(ida, 0);
	CHECK(world.ended == 0, "eager: flushed before its removal: nothing recorded yet");
	CHECK(a->handover != NULL, "eager: flushed before its removal: the handover waits for the rmdir");
	removed(a);
	job_done(ida + 1, 0); /* b's */
	removed(b);
	CHECK(world.scheduled == world.now + WBG_CLEANUP_BATCH_USEC, "removals gather for one cleanup batch");
	advance(world.now + WBG_CLEANUP_BATCH_USEC);
	CHECK(world.cleanups == 1, "two removals in one batch: one scratch cycle");
	CHECK(world.ended == 0, "the dying-wb check waits for the kernel's cleanup work");
	advance(world.now + WBG_VERIFY_DELAY_USEC);
	CHECK(world.ended == 2, "both recorded after the check");
	CHECK(world.last_outcome == WBG_OUTCOME_FLUSHED, "both recorded flushed");
	CHECK(world_json_string_is("trigger", "populated-0"), "the record names its trigger");
	CHECK(world_json_string_is("outcome", "flushed"), "the record names its outcome");
	CHECK(world_json_bool("cleanup_rerun") == 1, "the record says the cleanup was re-run");
	CHECK(world_json_bool("dying_wb_clean") == 1, "the record says the dying wb was clean");
	CHECK(world_json_bool("flushed_before_rmdir") == 1, "the record says it was flushed before its rmdir");
	CHECK(world_json_double("ended_s") >= world_json_double("cleanup_s") && world_json_double("cleanup_s") > 0,
	      "the record says when it ended, after its cleanup (wbguardctl handovers' ENDED)");
	CHECK(world.pending_drops == 2, "ended: the pending records are dropped");
	CHECK(lifecycle_n_active(&lc) == 0, "ended: nothing active");
	CHECK(lc_end_stats(&lc)->by[WBG_TRIGGER_POPULATED_0][WBG_OUTCOME_FLUSHED] == 2, "counted by trigger and outcome");
	CHECK(lc_engine_stats(&lc)->cleanup_cycles == 1, "the scratch cycle is counted");
	CHECK(lc_end_stats(&lc)->flushed_device_bytes == 2 * 4096, "the flushes' device bytes are counted");
	CHECK(lc_end_stats(&lc)->reaction.count == 2, "the reaction time is observed once per handover");
	CHECK(lc_end_stats(&lc)->flush_duration.count == 2, "the flush duration is observed once per handover");
	teardown();
}

static void test_dying_still_dirty(void)
{
	struct wbg_cgroup *a;
	uint64_t id;

	setup(false);
	a = cgroup(200, "k/a");
	id = lifecycle_event(&lc, a, WBG_TRIGGER_POPULATED_0);
	job_done(id, 0);
	removed(a);
	dying_wb_dirty(200);
	advance(world.now + S);
	CHECK(world.ended == 1, "a dying wb still dirty after the handover: it ends all the same");
	CHECK(world_json_bool("dying_wb_clean") == 0, "... its record says the dying wb was not clean");
	CHECK(lc_watch_stats(&lc)->verify_dirty == 1, "... and it is counted");
	teardown();
}

static void test_early_ends(void)
{
	struct wbg_cgroup *c;

	setup(false);
	c = cgroup(300, "k/clean");
	world.dirty = 0;
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world_recorded(1, WBG_OUTCOME_CLEAN), "nothing dirty: recorded clean at once");
	CHECK(world.n_sub == 0, "nothing dirty: no flush");
	CHECK(lc_settled(&lc, c->id), "nothing dirty: the cgroup is settled");
	removed(c);
	CHECK(world.ended == 1, "a settled cgroup's removal is no second record");

	world.dirty = 4096;
	world.children = true;
	c = cgroup(301, "k/pod");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world_recorded(2, WBG_OUTCOME_CHILDREN), "a parent with child cgroups: children");
	world.children = false;

	lifecycle_set_mitigating(&lc, false);
	c = cgroup(302, "k/off");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world_recorded(3, WBG_OUTCOME_DISABLED), "mitigation off: disabled");
	CHECK(strcmp(world.last_reason, "mitigation off") == 0, "mitigation off: the reason says so");
	c->populated = true;
	lifecycle_repopulated(&lc, c); /* in use again: no longer settled */
	world.calls[0] = 0;
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[0]) == 1,
	      "mitigation off: an API request is taken all the same");
	CHECK(world.n_sub == 1, "mitigation off: ... and flushes");
	lifecycle_set_mitigating(&lc, true);
	teardown();

	setup(false);
	lc.params.flush = false;
	c = cgroup(303, "k/noflush");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world_recorded(1, WBG_OUTCOME_DISABLED), "[flush] enable = no: disabled");
	CHECK(world.n_sub == 0, "[flush] enable = no: nothing flushed");
	teardown();

	setup(false);
	world.plan_result = -ENOMEM;
	c = cgroup(304, "k/badplan");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world_recorded(1, WBG_OUTCOME_FAILED), "a plan that fails: failed");
	CHECK(strcmp(world.last_reason, "planning failed") == 0, "a plan that fails: the reason says so");
	teardown();
}

/* Nothing dirty of its own in the plan, for each reason the plan gives. */
static void setup_empty_plan(bool own_set_missing)
{
	setup(false);
	world.plan_targets = 0;
	world.own_set_missing = own_set_missing;
}

static void test_empty_plans(void)
{
	struct wbg_cgroup *pod, *ctr;
	uint64_t id;

	/* the CRI layout: the container's cgroup removed just before the pod's */
	setup(false);
	pod = cgroup(400, "kubepods/pod1");
	ctr = cgroup(401, "kubepods/pod1/ctr");
	id = lifecycle_event(&lc, ctr, WBG_TRIGGER_POPULATED_0);
	job_done(id, 0);
	removed(ctr);
	world.plan_targets = 0;
	world.own_set_missing = true;
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.last_outcome == WBG_OUTCOME_CHILDREN && world.last_trigger == WBG_TRIGGER_POPULATED_0,
	      "a pod cgroup whose container was just removed, dirtied nothing itself: children");
	CHECK(strstr(world.last_reason, "removed child cgroups") != NULL, "... the reason names the removed children");
	teardown();

	setup_empty_plan(true);
	world.set_maybe_evicted = true;
	pod = cgroup(410, "kubepods/evicted");
	id = lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.n_sub == 2, "its BPF set maybe evicted: every filesystem flushed");
	CHECK(lc_event_stats(&lc)->plans_set_evicted == 1, "its BPF set maybe evicted: counted");
	job_done(id, 0);
	job_done(id, 0); /* one job per filesystem */
	removed(pod);
	advance(world.now + S);
	CHECK(world.last_outcome == WBG_OUTCOME_FLUSHED, "... flushed from the mount table");
	CHECK(world_json_string_is("plan", "mounts (bpf set evicted)"), "... and the record says why");
	teardown();

	setup_empty_plan(false);
	world.n_excluded = 1;
	pod = cgroup(420, "k/nfs");
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.last_outcome == WBG_OUTCOME_NO_TARGETS, "only excluded filesystems: no-targets");
	CHECK(world.last_not_own, "only excluded filesystems: not its own, no boost");
	CHECK(strstr(world.last_reason, "exclude_fstypes") != NULL, "only excluded filesystems: the reason names the key");
	teardown();

	setup_empty_plan(true);
	pod = cgroup(430, "k/notown");
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.last_outcome == WBG_OUTCOME_NO_TARGETS,
	      "dirty pages charged to it that are not its own writes: no-targets");
	CHECK(world.last_not_own, "dirty pages charged to it that are not its own writes: no boost");
	removed(pod);
	CHECK(world.ended == 1, "... and its removal is no second record");
	teardown();

	setup_empty_plan(false);
	world.dirty_result = -ENOENT; /* gone before its populated 0 was read */
	pod = cgroup(440, "k/quick");
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	removed(pod);
	CHECK(world.ended == 1, "a cgroup gone at once: one record, not one per event");
	CHECK(world.last_outcome == WBG_OUTCOME_CLEAN, "a cgroup gone at once, nothing recorded of it: clean");
	teardown();
}

static void test_timeout(void)
{
	struct wbg_cgroup *c;
	uint64_t id;

	setup(false);
	c = cgroup(500, "k/hung");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	advance(world.now + 29 * S);
	CHECK(world.timed_out == 0, "no timeout before timeout_sec");
	advance(world.now + 2 * S);
	CHECK(c->handover && c->handover->outcome == WBG_OUTCOME_TIMEOUT, "at timeout_sec: timed out");
	CHECK(world.timed_out == 1, "at timeout_sec: the pool told to replace stuck workers");
	job_done(id, 0);
	CHECK(c->handover && c->handover->outcome == WBG_OUTCOME_TIMEOUT, "a job that comes back late changes nothing");
	removed(c);
	advance(world.now + S);
	CHECK(world_recorded(1, WBG_OUTCOME_TIMEOUT), "recorded as timeout");
	CHECK(strcmp(world.last_reason, "flush timeout") == 0, "recorded with its reason");
	teardown();

	setup(false);
	world.submit_result = -EBUSY;
	c = cgroup(501, "k/busy");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world_recorded(1, WBG_OUTCOME_FAILED),
	      "a target that takes no more flushes: failed at once");
	CHECK(!lc_settled(&lc, c->id), "a target that takes no more flushes: not settled (its removal tries again)");
	teardown();
}

static void test_on_evidence(void)
{
	struct wbg_cgroup *c;
	const char *owner = NULL;
	struct wbg_handover *h;

	setup(true);
	c = cgroup(700, "k/ev");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.n_sub == 0, "on-evidence: populated 0 flushes nothing");
	CHECK(c->handover && c->handover->phase == WBG_PHASE_DEFERRED, "on-evidence: populated 0 defers the handover");
	h = c->handover;
	if (!h)
		abort(); /* (failed above) */
	removed(c);
	CHECK(h->phase == WBG_PHASE_WATCHED && lifecycle_watching(&lc, 700), "its removal: watched");
	CHECK(world.armed == 1, "its removal: BPF armed");
	CHECK(world.n_sub == 0, "its removal: still no I/O");
	dying_wb_dirty(700);
	advance(world.now + 2 * S);
	CHECK(world.ended == 0, "its dying wb still dirty: still watched");
	CHECK(lifecycle_evidence(&lc, 700, NULL, &owner) == 0, "evidence for the watched cgroup is taken");
	CHECK(owner && strcmp(owner, "k/ev") == 0, "evidence: its owner is the watched cgroup");
	CHECK(world.n_sub == 1, "evidence: flushed at once");
	CHECK(world.sub[0].purpose == FLUSH_FOR_EVIDENCE, "evidence: in evidence mode");
	CHECK(world.last_plan_inodes, "evidence: its own inodes planned");
	CHECK(lifecycle_evidence(&lc, 999, NULL, &owner) == -ENOENT, "evidence for a cgroup not watched: -ENOENT");
	world.n_wb_dirty = 0;
	job_done(h->id, 0);
	advance(world.now + 2 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "flushed, cleaned up, checked: recorded flushed");
	CHECK(world_json_int("evidence") == 1, "the record counts its evidence");
	CHECK(world_json_bool("cleanup_rerun") == 1, "the record says the cleanup was re-run");
	CHECK(world.forgotten == 1, "its BPF set forgotten at the end");
	CHECK(lc_engine_stats(&lc)->cleanup_cycles >= 1, "the watch's cleanup cycles are counted");
	teardown();

	setup(true);
	c = cgroup(710, "k/quiet");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	removed(c);
	advance(world.now + 3 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_DRAINED), "a dying wb nobody touches drains by itself: drained");
	CHECK(world.n_sub == 0, "a dying wb nobody touches: no flush at all");
	teardown();

	setup(true);
	c = cgroup(720, "k/again");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	lifecycle_repopulated(&lc, c);
	CHECK(world_recorded(1, WBG_OUTCOME_CLEAN), "in use again before removal: clean");
	CHECK(!c->handover, "in use again before removal: its handover is over");
	CHECK(world.n_sub == 0, "in use again before removal: nothing flushed");
	teardown();

	setup(true);
	lc.params.watch.max = 0;
	c = cgroup(730, "k/full");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	removed(c);
	CHECK(world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_HANDOVER, "the watch table full: flushed at once, as eager");
	teardown();
}

static void test_stop(void)
{
	struct wbg_cgroup *a, *b, *c;

	setup(true);
	a = cgroup(800, "k/flushing");
	(void)lifecycle_flush_request(&lc, a, a->path, 60 * S, &world.calls[30]);
	b = cgroup(801, "k/deferred");
	(void)lifecycle_event(&lc, b, WBG_TRIGGER_POPULATED_0);
	c = cgroup(802, "k/watched");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	removed(c);
	world.ended = 0;
	lifecycle_stop(&lc);
	CHECK(world.ended == 3, "stopping records every handover in progress");
	CHECK(lifecycle_n_active(&lc) == 0, "stopping leaves nothing active");
	CHECK(world.replies[30] == 1 && strcmp(world.reply_outcome[30], "pending") == 0,
	      "stopping answers its waiting caller: pending");
	CHECK(world.pending_drops == 0 && world.pending_saves == 3,
	      "the interrupted flush's, the deferral's and the watch's pending records are kept for the next start");
	CHECK(lc_end_stats(&lc)->by[WBG_TRIGGER_API][WBG_OUTCOME_INTERRUPTED] == 1, "the flushing (api) handover: interrupted");
	CHECK(lc_end_stats(&lc)->by[WBG_TRIGGER_POPULATED_0][WBG_OUTCOME_INTERRUPTED] == 2,
	      "the deferred and the watched: interrupted, none flushed");
	registry_free(&reg);
}

static void test_stop_job(void)
{
	struct wbg_cgroup *c;
	uint64_t id;

	setup(false);
	c = cgroup(900, "system.slice/x.service");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_STOP_JOB);
	job_done(id, 0);
	lifecycle_job_type(&lc, c, "reload");
	CHECK(c->handover && strcmp(c->handover->reason, "job was a reload") == 0,
	      "a stop job that was a reload says so in the record");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.n_sub == 2 && c->handover->replanned, "populated 0 after a stop job: flushed once more");
	CHECK(c->handover->n_targets == 1, "populated 0 after a stop job: its targets counted once");
	job_done(id, 0);
	removed(c);
	advance(world.now + S);
	CHECK(world.ended == 1, "one record for the stop, the emptying and the removal");
	CHECK(world.last_trigger == WBG_TRIGGER_STOP_JOB, "... its trigger the stop job");
	CHECK(world.last_outcome == WBG_OUTCOME_FLUSHED, "... its outcome flushed");
	teardown();
}

static void test_recovery(void)
{
	dev_t devs[1] = { makedev(253, 0) };
	bool bdev[1] = { false };
	uint64_t rid = 0, rid2 = 0;

	setup(false);
	CHECK(lifecycle_recover(&lc, 950, "(removed while not watching)", devs, bdev, 1, &rid) == 0 && rid,
	      "recovery: a handover for the recorded cgroup");
	CHECK(world.n_sub == 1, "recovery: the recorded targets flushed again");
	job_done(rid, 0);
	advance(world.now + S);
	CHECK(world.cleanups == 1, "recovery: then the cleanup, like any removal");
	CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_RECOVERED, "recovery: recorded as recovered");
	CHECK(world.last_outcome == WBG_OUTCOME_FLUSHED, "recovery: flushed");
	world.recorded_targets = 0;
	(void)lifecycle_recover(&lc, 951, "k/gone", devs, bdev, 1, &rid2);
	CHECK(world_recorded(2, WBG_OUTCOME_NO_TARGETS), "recovery, its filesystems gone: no-targets");
	CHECK(rid2 > rid, "handover ids only grow");
	CHECK(lifecycle_recently_started(&lc, 950), "a recently started cgroup is known (the rmdir ring's duplicates)");
	CHECK(!lifecycle_recently_started(&lc, 12345), "a cgroup never started is not");

	/* a storm: more handovers in progress than the ring of ended ones
	 * holds; the first is still known */
	for (uint64_t k = 20000; k < 21100; k++) {
		char p[32];

		snprintf(p, sizeof(p), "k/storm%d", (int)k);
		(void)lifecycle_event(&lc, cgroup(k, p), WBG_TRIGGER_REMOVED);
	}
	CHECK(lifecycle_n_active(&lc) >= 1100, "a storm of removals: 1,100 handovers in progress (%zu active)", lifecycle_n_active(&lc));
	CHECK(lifecycle_recently_started(&lc, 20000), "a storm of removals: the first's removal is still known");
	teardown();
}

static void test_names(void)
{
	const char *k[] = { "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.kubernetes.container.name" };
	const char *v[] = { "web-0", "shop", "app" };
	struct wbg_cgroup *pod, *ctr;
	uint64_t id;

	setup(false);
	(void)containers_register(&containers, "kubepods/p1/c1", "c1id", "/b", k, v, 3);
	ctr = cgroup(1000, "kubepods/p1/c1");
	pod = cgroup(1001, "kubepods/p1");
	id = lifecycle_event(&lc, ctr, WBG_TRIGGER_POPULATED_0);
	job_done(id, 0);
	removed(ctr);
	advance(world.now + S);
	CHECK(world_json_string_is("pod", "web-0"), "a registered container's record names its pod");
	CHECK(world_json_string_is("namespace", "shop"), "a registered container's record names its namespace");
	CHECK(world_json_string_is("container", "app"), "a registered container's record names its container");
	CHECK(world_json_string_is("registered_id", "c1id"), "a registered container's record names its registered id");
	world.dirty = 0;
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world_json_string_is("pod", "web-0"), "its pod's record: the pod's name from the container below it");
	CHECK(world_json_string_is("namespace", "shop"), "its pod's record: the namespace from the container below it");
	CHECK(world_json_string_is("container", ""), "its pod's record: no container");
	CHECK(!world_json_has("registered_id"), "its pod's record: no registered id");
	teardown();
	containers_forget(&containers, "kubepods/p1/c1");
}

/* When a removed cgroup's BPF records are forgotten: one decision for
 * the three moments, then the lifecycle carrying it out at a removal. */
static void test_forget(void)
{
	/* moment, active, removed, was_watched -> forget */
	static const struct {
		enum wbg_forget_moment when;
		bool active, removed, was_watched, forget;
	} table[] = {
		{ WBG_FORGET_REMOVED, false, true, false, true },
		{ WBG_FORGET_REMOVED, true, true, false, false },
		{ WBG_FORGET_ENDED, false, true, false, true },
		{ WBG_FORGET_ENDED, true, true, false, false },
		{ WBG_FORGET_ENDED, false, false, false, false },
		{ WBG_FORGET_ENDED, false, true, true, false },
		{ WBG_FORGET_UNWATCHED, true, true, true, true },
		{ WBG_FORGET_UNWATCHED, false, true, true, true },
	};
	struct wbg_cgroup *c;
	uint64_t id;
	bool all = true;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct wbg_forget_facts f = { table[i].active, table[i].removed, table[i].was_watched };

		all &= handover_forget_dirtied(table[i].when, f) == table[i].forget;
	}
	CHECK(all, "forget: the decision's table (removed, ended, unwatched)");

	/* eager: the flush in progress at the removal keeps the records until
	 * the handover ends */
	setup(false);
	c = cgroup(1100, "k/forget");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	removed(c);
	CHECK(lifecycle_cgroup_active(&lc, 1100) && world.forgotten == 0,
	      "forget: a removal while its handover flushes keeps its records");
	job_done(id, 0);
	advance(world.now + 3 * S);
	CHECK(!lifecycle_cgroup_active(&lc, 1100) && world.forgotten == 1, "forget: ... its handover's end forgets them");
	world.dirty = 0;
	c = cgroup(1200, "k/forget-clean");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	removed(c);
	CHECK(world.forgotten == 2, "forget: a removal with no handover of it forgets at once");
	teardown();
}

/* A cgroup's reports from several sources: one decision merges them. */
static void test_merge(void)
{
	static const struct {
		enum wbg_trigger t;
		struct wbg_report_facts f;
		enum wbg_merge want;
	} table[] = {
		{ WBG_TRIGGER_RMDIR_BPF, { .in_scope = true }, WBG_MERGE_START },
		{ WBG_TRIGGER_RMDIR_BPF, { .in_scope = true, .tracked = true }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_RMDIR_BPF, { .in_scope = true, .recent = true }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_RMDIR_BPF, { .in_scope = false }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_STOP_JOB, { .in_scope = true, .populated = true }, WBG_MERGE_START },
		{ WBG_TRIGGER_STOP_JOB, { .in_scope = true, .populated = true, .handover = true }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_STOP_JOB, { .in_scope = true, .populated = false }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_STOP_JOB, { .in_scope = true, .populated = true, .removed = true }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_STOP_JOB, { .in_scope = false, .populated = true }, WBG_MERGE_DROP },
		{ WBG_TRIGGER_POPULATED_0, { .in_scope = true }, WBG_MERGE_START },
		{ WBG_TRIGGER_POPULATED_0, { .in_scope = true, .handover = true }, WBG_MERGE_MOVE_ON },
		{ WBG_TRIGGER_REMOVED, { .in_scope = true }, WBG_MERGE_START },
		{ WBG_TRIGGER_REMOVED, { .in_scope = true, .handover = true, .settled = true }, WBG_MERGE_MOVE_ON },
		{ WBG_TRIGGER_REMOVED, { .in_scope = true, .settled = true }, WBG_MERGE_SETTLED },
		{ WBG_TRIGGER_RESCAN, { .in_scope = true, .settled = true }, WBG_MERGE_SETTLED },
		{ WBG_TRIGGER_API, { .in_scope = true, .handover = true }, WBG_MERGE_MOVE_ON },
		{ WBG_TRIGGER_STALL, { .in_scope = true }, WBG_MERGE_DROP },
	};
	struct wbg_cgroup *c, rmdir = { .id = 1310, .path = (char *)"k/rmdir", .in_scope = true, .removed = true };
	unsigned wrong = 0;
	uint64_t id;

	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (handover_merge_report(table[i].t, table[i].f) != table[i].want) {
			wrong++;
			printf("# merge: row %zu (%s) decided otherwise\n", i, wbg_trigger_to_string(table[i].t));
		}
	CHECK(wrong == 0, "merge: the decision's table (%zu reports)", ELEMENTSOF(table));

	setup(false);
	c = cgroup(1300, "k/merge");
	rmdir.id = c->id;
	CHECK(lifecycle_event(&lc, &rmdir, WBG_TRIGGER_RMDIR_BPF) == 0 && !lifecycle_cgroup_active(&lc, 1300),
	      "merge: BPF's rmdir of a cgroup inotify tracks starts nothing (inotify reports it)");
	rmdir.id = 1310;
	id = lifecycle_event(&lc, &rmdir, WBG_TRIGGER_RMDIR_BPF);
	CHECK(id && lifecycle_cgroup_active(&lc, 1310), "merge: BPF's rmdir of an untracked cgroup starts its handover");
	CHECK(lifecycle_event(&lc, &rmdir, WBG_TRIGGER_RMDIR_BPF) == 0, "merge: ... and its second report adds nothing");
	rmdir = (struct wbg_cgroup){ .id = 1320, .path = (char *)"k", .in_scope = false, .removed = true };
	CHECK(lifecycle_event(&lc, &rmdir, WBG_TRIGGER_RMDIR_BPF) == 0 && !lifecycle_cgroup_active(&lc, 1320),
	      "merge: BPF's rmdir of a cgroup out of scope starts nothing");
	c->populated = false;
	CHECK(lifecycle_event(&lc, c, WBG_TRIGGER_STOP_JOB) == 0 && !lifecycle_cgroup_active(&lc, 1300),
	      "merge: a stop job for a cgroup already emptied starts nothing (its populated 0 did)");
	teardown();
}

WORLD_MAIN(test_forget, test_merge, test_names, test_eager, test_dying_still_dirty, test_early_ends, test_empty_plans,
	   test_timeout, test_on_evidence, test_stop, test_stop_job, test_recovery)
