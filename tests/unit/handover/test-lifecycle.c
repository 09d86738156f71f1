/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle (lifecycle.h) against a pretend world: a clock
 * the test moves, a pool whose jobs end when the test says, memory.stat
 * and wb_stats as the test sets them, and the records, replies and state
 * dir calls it sees. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <json-c/json.h>

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
	CHECK(ida > 0 && world.n_sub == 1 && world.sub[0].id == ida && world.sub[0].purpose == FLUSH_FOR_HANDOVER,
	      "eager: populated 0 with dirty data submits its plan at once");
	CHECK(world.pending_saves == 1 && lc.n_active == 1, "eager: its pending record is saved while the flush runs");
	CHECK(world.scheduled == world.now + 30 * S, "eager: the one timer is due at its flush timeout");
	(void)lifecycle_event(&lc, b, WBG_TRIGGER_POPULATED_0);
	job_done(ida, 0);
	CHECK(world.ended == 0 && a->handover, "eager: flushed before its removal: the handover waits for the rmdir");
	removed(a);
	job_done(ida + 1, 0); /* b's */
	removed(b);
	CHECK(world.scheduled == world.now + WBG_CLEANUP_BATCH_USEC, "removals gather for one cleanup batch");
	advance(world.now + WBG_CLEANUP_BATCH_USEC);
	CHECK(world.cleanups == 1, "two removals in one batch: one scratch cycle");
	CHECK(world.ended == 0, "the dying-wb check waits for the kernel's cleanup work");
	advance(world.now + WBG_VERIFY_DELAY_USEC);
	CHECK(world.ended == 2 && world.last_outcome == WBG_OUTCOME_FLUSHED, "both recorded flushed after the check");
	CHECK(json_has("trigger", "populated-0") && json_has("outcome", "flushed") && strstr(world.last_json, "\"cleanup_rerun\":true") &&
		      strstr(world.last_json, "\"dying_wb_clean\":true") && strstr(world.last_json, "\"flushed_before_rmdir\":true"),
	      "the record: trigger, outcome, cleanup re-run, dying wb clean, flushed before rmdir");
	CHECK(world.pending_drops == 2 && lc.n_active == 0, "ended: pending records dropped, nothing active");
	CHECK(lc.stats.by[WBG_TRIGGER_POPULATED_0][WBG_OUTCOME_FLUSHED] == 2 && lc.stats.cleanup_cycles == 1 &&
		      lc.stats.flushed_device_bytes == 2 * 4096,
	      "counted by trigger and outcome; the cycle and device bytes too");
	CHECK(lc.reaction.count == 2 && lc.flush_duration.count == 2, "reaction and flush duration observed once each");
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
	world.wb_dirty[world.n_wb_dirty++] = 200;
	advance(world.now + S);
	CHECK(world.ended == 1 && strstr(world.last_json, "\"dying_wb_clean\":false") && lc.stats.verify_dirty == 1,
	      "a dying wb still dirty after the handover: recorded and counted");
	teardown();
}

static void test_early_ends(void)
{
	struct wbg_cgroup *c;

	setup(false);
	c = cgroup(300, "k/clean");
	world.dirty = 0;
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_CLEAN && c->settled && world.n_sub == 0,
	      "nothing dirty: clean at once, no flush, settled");
	removed(c);
	CHECK(world.ended == 1, "a settled cgroup's removal is no second record");

	world.dirty = 4096;
	world.children = true;
	c = cgroup(301, "k/pod");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.ended == 2 && world.last_outcome == WBG_OUTCOME_CHILDREN, "a parent with child cgroups: children");
	world.children = false;

	lifecycle_set_mitigating(&lc, false);
	c = cgroup(302, "k/off");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.ended == 3 && world.last_outcome == WBG_OUTCOME_DISABLED && strcmp(world.last_reason, "mitigation off") == 0,
	      "mitigation off: disabled, nothing flushed");
	c->populated = true;
	c->settled = false;
	world.calls[0] = 0;
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[0]) == 1 && world.n_sub == 1,
	      "mitigation off: an API request flushes all the same");
	lifecycle_set_mitigating(&lc, true);
	teardown();

	setup(false);
	lc.params.flush = false;
	c = cgroup(303, "k/noflush");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_DISABLED && world.n_sub == 0, "[flush] enable = no: disabled");
	teardown();

	setup(false);
	world.plan_result = -ENOMEM;
	c = cgroup(304, "k/badplan");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FAILED && strcmp(world.last_reason, "planning failed") == 0,
	      "a plan that fails: failed, with its reason");
	teardown();
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
	CHECK(world.last_outcome == WBG_OUTCOME_CHILDREN && world.last_trigger == WBG_TRIGGER_POPULATED_0 &&
		      strstr(world.last_reason, "removed child cgroups"),
	      "a pod cgroup whose container was just removed, dirtied nothing itself: children");
	teardown();

	setup(false);
	world.plan_targets = 0;
	world.own_set_missing = true;
	world.set_maybe_evicted = true;
	pod = cgroup(410, "kubepods/evicted");
	id = lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.n_sub == 2 && lc.stats.plans_set_evicted == 1, "its BPF set maybe evicted: every filesystem, counted");
	job_done(id, 0);
	job_done(id, 0); /* one job per filesystem */
	removed(pod);
	advance(world.now + S);
	CHECK(world.last_outcome == WBG_OUTCOME_FLUSHED && json_has("plan", "mounts (bpf set evicted)"),
	      "... flushed from the mount table, and the record says why");
	teardown();

	setup(false);
	world.plan_targets = 0;
	world.n_excluded = 1;
	pod = cgroup(420, "k/nfs");
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.last_outcome == WBG_OUTCOME_NO_TARGETS && world.last_not_own && strstr(world.last_reason, "exclude_fstypes"),
	      "only excluded filesystems: no-targets, no boost");
	teardown();

	setup(false);
	world.plan_targets = 0;
	world.own_set_missing = true;
	pod = cgroup(430, "k/notown");
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(world.last_outcome == WBG_OUTCOME_NO_TARGETS && world.last_not_own,
	      "dirty pages charged to it that are not its own writes: no-targets, no boost");
	removed(pod);
	CHECK(world.ended == 1, "... and its removal is no second record");
	teardown();

	setup(false);
	world.plan_targets = 0;
	world.dirty_result = -ENOENT; /* gone before its populated 0 was read */
	pod = cgroup(440, "k/quick");
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	removed(pod);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_CLEAN,
	      "nothing recorded of a cgroup gone at once: one clean record, not one per event");
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
	CHECK(world.timed_out == 1 && c->handover && c->handover->outcome == WBG_OUTCOME_TIMEOUT,
	      "at timeout_sec: timed out, the pool told to replace stuck workers");
	job_done(id, 0);
	CHECK(c->handover && c->handover->outcome == WBG_OUTCOME_TIMEOUT, "a job that comes back late changes nothing");
	removed(c);
	advance(world.now + S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_TIMEOUT && strcmp(world.last_reason, "flush timeout") == 0,
	      "recorded as timeout, with its reason");
	teardown();

	setup(false);
	world.submit_result = -EBUSY;
	c = cgroup(501, "k/busy");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FAILED && !c->settled,
	      "a target that takes no more flushes: failed at once (its removal tries again)");
	teardown();
}

static void test_waiters(void)
{
	struct wbg_cgroup *c, *d;
	uint64_t id;

	setup(false);
	c = cgroup(600, "k/live");
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[1]) == 1 && world.replies[1] == 0 &&
		      world.refs[1] == 1 && lc.n_waiters == 1,
	      "FlushCgroup on a live cgroup: an api handover, its caller waits");
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[2]) == 1 && lc.n_waiters == 2 && world.n_sub == 1,
	      "a second caller waits for the same flush");
	id = c->handover->id;
	job_done(id, 0);
	CHECK(world.replies[1] == 1 && world.replies[2] == 1 && strcmp(world.reply_outcome[1], "flushed") == 0 &&
		      world.reply_id[1] == id && world.refs[1] == 0 && world.refs[2] == 0 && lc.n_waiters == 0,
	      "the flush done: each caller answered once, flushed, with the handover's id, and released");
	CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_API && !c->handover,
	      "an api handover of a live cgroup ends with its flush");
	CHECK(lifecycle_flush_request(&lc, NULL, "k/live", 5 * S, &world.calls[3]) == 1 && world.replies[3] == 1 &&
		      world.reply_id[3] == id,
	      "asked again for a cgroup no longer tracked: answered from the recent records");
	CHECK(lifecycle_flush_request(&lc, NULL, "k/never", 5 * S, &world.calls[4]) == -ENOENT && world.replies[4] == 0,
	      "a cgroup never seen: -ENOENT, no reply");

	d = cgroup(601, "k/slow");
	(void)lifecycle_flush_request(&lc, d, d->path, 2 * S, &world.calls[5]);
	(void)lifecycle_flush_request(&lc, d, d->path, 0, &world.calls[6]);
	CHECK(world.replies[6] == 1 && strcmp(world.reply_outcome[6], "pending") == 0, "timeout 0: answered pending at once");
	advance(world.now + 2 * S);
	CHECK(world.replies[5] == 1 && strcmp(world.reply_outcome[5], "pending") == 0 && world.refs[5] == 0,
	      "the caller's timeout: answered pending once, released");
	job_done(d->handover->id, 0);
	CHECK(world.replies[5] == 1, "the flush that ends later answers nobody twice");

	{
		/* bounded, and shared: one tenant's callers take at most its
		 * cap; the others' still wait; 64 tenants' floors and the pool
		 * fill it */
		unsigned before = lc.n_waiters, refused = 0;
		int i = 10;

		d = cgroup(602, "k/many");
		for (; i < 10 + WBG_FLUSH_WAITERS_MAX; i++)
			refused += lifecycle_flush_request(&lc, d, d->path, 60 * S, &world.calls[i]) == -EBUSY;
		CHECK(lc.n_waiters - before == WBG_FLUSH_WAITERS_PER_TENANT &&
			      refused == WBG_FLUSH_WAITERS_MAX - WBG_FLUSH_WAITERS_PER_TENANT &&
			      lc.waiter_share.refused[WBG_SHARE_TENANT] == refused,
		      "one tenant's %d callers: %d waited for, the rest refused (-EBUSY), counted (%u)",
		      WBG_FLUSH_WAITERS_MAX, WBG_FLUSH_WAITERS_PER_TENANT, lc.n_waiters - before);
		for (int t = 0; t < 80 && i < CALLS - 1; t++) {
			struct wbg_cgroup *e;
			char p[32];

			snprintf(p, sizeof(p), "t%d/c", t);
			e = cgroup(700 + t, p);
			for (int k = 0; k < 8 && i < CALLS - 1; k++, i++)
				(void)lifecycle_flush_request(&lc, e, e->path, 60 * S, &world.calls[i]);
		}
		CHECK(lc.n_waiters == WBG_FLUSH_WAITERS_MAX && lc.waiter_share.refused[WBG_SHARE_POOL] > 0 &&
			      lifecycle_flush_request(&lc, d, d->path, 60 * S, &world.calls[CALLS - 1]) == -EBUSY,
		      "many tenants fill the table (%u): the pool's refusals counted, the next caller gets -EBUSY",
		      lc.n_waiters);
	}
	teardown();
	CHECK(world.replies[10] == 1 && strcmp(world.reply_outcome[10], "pending") == 0 && world.refs[10] == 0,
	      "stopping answers every waiting caller once");
}

static bool even_call(void *call, const void *data)
{
	return call_index(call) % 2 == 0;
}

static void test_drop_waiters(void)
{
	struct wbg_cgroup *c;

	setup(false);
	c = cgroup(650, "k/dropped");
	for (int i = 20; i < 24; i++)
		(void)lifecycle_flush_request(&lc, c, c->path, 60 * S, &world.calls[i]);
	CHECK(lifecycle_drop_waiters(&lc, even_call, NULL) == 2 && lc.n_waiters == 2 && world.refs[20] == 0 &&
		      world.replies[20] == 0 && world.refs[21] == 1,
	      "a closed connection's callers go, unanswered; the others stay");
	job_done(c->handover->id, 0);
	CHECK(world.replies[20] == 0 && world.replies[21] == 1, "the flush's end answers only those left");
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
	CHECK(world.n_sub == 0 && c->handover && c->handover->phase == WBG_PHASE_DEFERRED,
	      "on-evidence: populated 0 flushes nothing (deferred)");
	h = c->handover;
	removed(c);
	CHECK(world.n_sub == 0 && h->phase == WBG_PHASE_WATCHED && world.armed == 1 && lifecycle_watching(&lc, 700),
	      "its removal: watched, BPF armed, still no I/O");
	world.wb_dirty[world.n_wb_dirty++] = 700;
	advance(world.now + 2 * S);
	CHECK(world.ended == 0, "its dying wb still dirty: still watched");
	CHECK(lifecycle_evidence(&lc, 700, NULL, &owner) == 0 && owner && strcmp(owner, "k/ev") == 0 && world.n_sub == 1 &&
		      world.sub[0].purpose == FLUSH_FOR_EVIDENCE && world.last_plan_inodes,
	      "evidence: its own inodes flushed at once, evidence mode");
	CHECK(lifecycle_evidence(&lc, 999, NULL, &owner) == -ENOENT, "evidence for a cgroup not watched: -ENOENT");
	world.n_wb_dirty = 0;
	job_done(h->id, 0);
	advance(world.now + 2 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_FLUSHED && strstr(world.last_json, "\"evidence\":1") &&
		      strstr(world.last_json, "\"cleanup_rerun\":true") && world.forgotten == 1,
	      "flushed, cleaned up, checked: recorded with its evidence; its BPF set forgotten");
	CHECK(lc.stats.cleanup_cycles >= 1, "the watch's cleanup cycles are counted");
	teardown();

	setup(true);
	c = cgroup(710, "k/quiet");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	removed(c);
	advance(world.now + 3 * S);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_DRAINED && world.n_sub == 0,
	      "a dying wb nobody touches drains by itself: drained, no flush at all");
	teardown();

	setup(true);
	c = cgroup(720, "k/again");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	lifecycle_repopulated(&lc, c);
	CHECK(world.ended == 1 && world.last_outcome == WBG_OUTCOME_CLEAN && !c->handover && world.n_sub == 0,
	      "in use again before removal: clean, nothing flushed");
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
	struct wbg_handover *hb;

	setup(true);
	a = cgroup(800, "k/flushing");
	(void)lifecycle_flush_request(&lc, a, a->path, 60 * S, &world.calls[30]);
	b = cgroup(801, "k/deferred");
	(void)lifecycle_event(&lc, b, WBG_TRIGGER_POPULATED_0);
	c = cgroup(802, "k/watched");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	hb = b->handover;
	removed(c);
	world.ended = 0;
	lifecycle_stop(&lc);
	CHECK(world.ended == 3 && lc.n_active == 0, "stopping records every handover in progress");
	CHECK(world.replies[30] == 1 && strcmp(world.reply_outcome[30], "pending") == 0, "its waiting caller answered");
	CHECK(world.pending_drops == 0 && world.pending_saves == 3,
	      "the interrupted flush's, the deferral's and the watch's pending records are kept for the next start");
	CHECK(lc.stats.by[WBG_TRIGGER_API][WBG_OUTCOME_INTERRUPTED] == 1 &&
		      lc.stats.by[WBG_TRIGGER_POPULATED_0][WBG_OUTCOME_INTERRUPTED] == 2,
	      "flushing, deferred and watched: all three interrupted, none flushed");
	(void)hb;
	registry_free(&reg);
}

static void test_stop_job_and_recovery(void)
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
	CHECK(world.n_sub == 2 && c->handover->n_targets == 1 && c->handover->replanned,
	      "populated 0 after a stop job: flushed once more, its targets counted once");
	job_done(id, 0);
	removed(c);
	advance(world.now + S);
	CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_STOP_JOB && world.last_outcome == WBG_OUTCOME_FLUSHED,
	      "one record for the stop, the emptying and the removal");
	teardown();

	setup(false);
	{
		dev_t devs[1] = { makedev(253, 0) };
		bool bdev[1] = { false };
		uint64_t rid = 0, rid2 = 0;

		CHECK(lifecycle_recover(&lc, 950, "(removed while not watching)", devs, bdev, 1, &rid) == 0 && rid &&
			      world.n_sub == 1,
		      "recovery: the recorded targets flushed again");
		job_done(rid, 0);
		advance(world.now + S);
		CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_RECOVERED && world.last_outcome == WBG_OUTCOME_FLUSHED &&
			      world.cleanups == 1,
		      "... then the cleanup, like any removal: recovered, flushed");
		world.recorded_targets = 0;
		(void)lifecycle_recover(&lc, 951, "k/gone", devs, bdev, 1, &rid2);
		CHECK(world.ended == 2 && world.last_outcome == WBG_OUTCOME_NO_TARGETS && rid2 > rid,
		      "its filesystems gone: no-targets; ids only grow");
	}
	CHECK(lifecycle_recently_started(&lc, 950) && !lifecycle_recently_started(&lc, 12345),
	      "recently started cgroups are known (the rmdir ring's duplicates)");
	{
		/* a storm: more handovers in progress than the ring of ended
		 * ones holds; the first is still known */
		for (uint64_t k = 20000; k < 21100; k++) {
			char p[32];

			snprintf(p, sizeof(p), "k/storm%d", (int)k);
			(void)lifecycle_event(&lc, cgroup(k, p), WBG_TRIGGER_REMOVED);
		}
		CHECK(lc.n_active >= 1100 && lifecycle_recently_started(&lc, 20000),
		      "1,100 handovers in progress: the first's removal is still known (%zu active)", lc.n_active);
	}
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
	CHECK(json_has("pod", "web-0") && json_has("namespace", "shop") && json_has("container", "app") &&
		      json_has("registered_id", "c1id"),
	      "a registered container's record names its pod, namespace, container and id");
	world.dirty = 0;
	(void)lifecycle_event(&lc, pod, WBG_TRIGGER_POPULATED_0);
	CHECK(json_has("pod", "web-0") && json_has("namespace", "shop") && json_has("container", "") &&
		      !strstr(world.last_json, "registered_id"),
	      "its pod's cgroup: the pod's names from the container below it, no container");
	teardown();
	containers_forget(&containers, "kubepods/p1/c1");
}

int main(void)
{
	if (world_open() < 0)
		return 1;
	test_names();
	test_eager();
	test_dying_still_dirty();
	test_early_ends();
	test_empty_plans();
	test_timeout();
	test_waiters();
	test_drop_waiters();
	test_on_evidence();
	test_stop();
	test_stop_job_and_recovery();
	world_close();
	return tap_done();
}
