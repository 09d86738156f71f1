/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The exit recipe ([flush] mode = exit) in the lifecycle, against the
 * pretend world: the cgroup's own inodes written as it empties (the plan
 * takes its inode sets; an incomplete one is the counted syncfs), its
 * removal watched for what that flush missed, whichever of the flush's end
 * and the removal comes first; a full watch table; the API and a stop
 * job's second look. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle-internal.h"
#include "lifecycle-world.h"
#include "tap.h"

static void setup_exit(void)
{
	setup(false);
	lc.params.at_exit = true;
	world.plan_uses_inodes = true;
}

/* A cgroup emptied and its exit flush done, then removed: its handover. */
static struct wbg_handover *exited(uint64_t cgroup_id, const char *path)
{
	struct wbg_cgroup *c = cgroup(cgroup_id, path);
	uint64_t id = lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	struct wbg_handover *h = c->handover;

	job_done(id, 0);
	removed(c);
	return h;
}

static void test_flush_then_removal(void)
{
	struct wbg_cgroup *c;
	struct wbg_handover *h;
	uint64_t id;

	setup_exit();
	c = cgroup(800, "k/exit");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	h = c->handover;
	CHECK(h && h->phase == WBG_PHASE_FLUSHING, "populated 0: flushing before any removal");
	CHECK(world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_EXIT, "populated 0: submitted as the exit recipe");
	CHECK(world.last_plan_inodes, "populated 0: its own inodes planned");
	CHECK(lc_event_stats(&lc)->exit_flushes == 1, "counted: one exit flush");
	CHECK(lc_event_stats(&lc)->exit_targets_inodes == 1 && lc_event_stats(&lc)->exit_targets_syncfs == 0,
	      "counted: one filesystem by its inodes, none by syncfs");
	job_done(id, 0);
	CHECK(h->phase == WBG_PHASE_AWAITING_REMOVAL && world.ended == 0,
	      "flushed while the cgroup exists: it awaits its removal");
	CHECK(world.armed == 0, "flushed while the cgroup exists: nothing armed yet");
	removed(c);
	CHECK(h->phase == WBG_PHASE_CLEANUP, "its removal: on the cleanup batch");
	CHECK(lifecycle_watching(&lc, 800), "its removal: watched");
	CHECK(world.armed == 1 && !world.last_arm_stall_only, "its removal: BPF armed for either sign");
	CHECK(world.n_sub == 1, "its removal: nothing written again");
	advance(world.now + 2 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "cleaned up and verified clean: recorded flushed");
	CHECK(world_json_string_is("recipe", "exit"), "the record names the exit recipe");
	CHECK(world_json_bool("cleanup_rerun") == 1, "the record says the cleanup was re-run");
	CHECK(world_json_bool("flushed_before_rmdir") == 1, "the record says it was flushed before its rmdir");
	CHECK(lc.watch.stats.ended[WBG_WATCH_END_FLUSHED] == 1, "the watch ended as flushed, not drained");
	CHECK(!lifecycle_watching(&lc, 800), "the watch is over");
	teardown();
}

static void test_missed(void)
{
	struct wbg_cgroup *c;
	struct wbg_handover *h;
	const char *owner = NULL;
	uint64_t id;

	/* a writer that started before the exit flush ended: its dirtying
	 * of an inode still on the dying wb is evidence, as on-evidence */
	setup_exit();
	h = exited(810, "k/missed");
	id = h->id;
	CHECK(lifecycle_evidence(&lc, 810, NULL, &owner) == 0, "evidence after the exit flush is taken");
	CHECK(h->phase == WBG_PHASE_FLUSHING && world.n_sub == 2, "evidence after the exit flush: its inodes flushed again at once");
	CHECK(world.sub[1].purpose == FLUSH_FOR_EVIDENCE, "evidence after the exit flush: in evidence mode");
	dying_wb_dirty(810);
	job_done(id, 0);
	advance(world.now + S / 2);
	CHECK(h->phase == WBG_PHASE_WATCHED && world.ended == 0, "its dying wb still dirty after that: watched again");
	world.n_wb_dirty = 0;
	advance(world.now + 3 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "drained: cleaned up, recorded flushed");
	CHECK(world_json_int("evidence") == 1, "the record counts its evidence");
	teardown();

	/* the runtime removed it while the exit flush ran */
	setup_exit();
	c = cgroup(820, "k/early-rmdir");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	h = c->handover;
	removed(c);
	CHECK(h->phase == WBG_PHASE_FLUSHING && !lifecycle_watching(&lc, 820),
	      "removed while its exit flush runs: the flush ends first, not watched yet");
	CHECK(lifecycle_cgroup_active(&lc, 820), "removed while its exit flush runs: its handover still active");
	CHECK(world.forgotten == 0, "removed while its exit flush runs: what it dirtied is kept for the evidence");
	world.now += 10 * MS;
	job_done(id, 0);
	CHECK(h->phase == WBG_PHASE_CLEANUP, "its flush's end: cleaned up");
	CHECK(lifecycle_watching(&lc, 820) && world.armed == 1, "its flush's end: watched, armed");
	advance(world.now + 2 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "recorded flushed");
	CHECK(world_json_bool("flushed_before_rmdir") == 0, "the record says it was flushed after its rmdir");
	teardown();
}

static void test_still_dirty(void)
{
	struct wbg_handover *h;
	const char *owner = NULL;
	uint64_t id;

	/* its wb still dirty after the exit flush (its inodes stay on the
	 * dirty list until a writeback pass visits them, or a page was
	 * written since): watched, and a live cgroup's first dirtying is
	 * still news */
	setup_exit();
	h = exited(870, "k/still-dirty");
	id = h->id;
	dying_wb_dirty(870);
	advance(world.now + S / 2);
	CHECK(h->phase == WBG_PHASE_WATCHED, "dirty at the check: watched");
	CHECK(world.armed == 2 && !world.last_arm_stall_only,
	      "dirty at the check: armed for either sign (no flush of ours since the exit recipe's)");
	CHECK(lifecycle_evidence(&lc, 870, NULL, &owner) == 0, "the replacement's first dirtying is evidence");
	CHECK(world.n_sub == 2 && world.sub[1].purpose == FLUSH_FOR_EVIDENCE,
	      "the replacement's first dirtying: its inodes flushed at once");
	job_done(id, 0);
	advance(world.now + S / 2);
	CHECK(h->phase == WBG_PHASE_WATCHED, "still dirty after that flush: watched again");
	CHECK(world.last_arm_stall_only, "still dirty after that flush: re-armed for the stall only");
	teardown();
}

static void test_bounds(void)
{
	struct wbg_cgroup *c;
	struct wbg_handover *h;

	/* the watch table full: cleaned up and verified as eager's */
	setup_exit();
	lc.params.watch.max = 0;
	h = exited(830, "k/full");
	CHECK(!lifecycle_watching(&lc, 830), "watch_max reached: not watched");
	CHECK(lc.watch.share.refused[WBG_SHARE_FULL] == 1, "watch_max reached: the refusal counted");
	CHECK(h->phase == WBG_PHASE_CLEANUP, "watch_max reached: on the cleanup batch");
	CHECK(world.n_sub == 1, "watch_max reached: nothing written again");
	advance(world.now + 2 * S);
	CHECK(world_recorded(1, WBG_OUTCOME_FLUSHED), "then verified and recorded flushed");
	CHECK(world.forgotten == 1, "what it dirtied forgotten at the end");
	teardown();

	/* no complete inode set: the counted fallback */
	setup_exit();
	world.plan_uses_inodes = false;
	c = cgroup(840, "k/incomplete");
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(world.n_sub == 1 && world.sub[0].purpose == FLUSH_FOR_EXIT,
	      "an incomplete inode set: the filesystem submitted (the pool's syncfs)");
	CHECK(lc_event_stats(&lc)->exit_targets_syncfs == 1 && lc_event_stats(&lc)->exit_targets_inodes == 0,
	      "an incomplete inode set: counted as the fallback");
	teardown();

	/* an explicit request is what it was */
	setup_exit();
	c = cgroup(850, "k/api");
	CHECK(lifecycle_flush_request(&lc, c, c->path, 60 * S, &world.calls[0]) >= 0 && world.n_sub == 1,
	      "an API flush in exit mode: flushed");
	CHECK(world.sub[0].purpose == FLUSH_FOR_HANDOVER && !world.last_plan_inodes,
	      "an API flush in exit mode: all of its data, as before");
	CHECK(lc_event_stats(&lc)->exit_flushes == 0, "an API flush in exit mode: no exit flush counted");
	teardown();
}

static void test_stop_job(void)
{
	struct wbg_cgroup *c;
	struct wbg_handover *h;
	uint64_t id;

	/* systemd's stop job starts it while the processes still write; at
	 * populated 0 what they wrote since is written once more, the same way */
	setup_exit();
	c = cgroup(860, "system.slice/db.service");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_STOP_JOB);
	h = c->handover;
	world.last_plan_inodes = false;
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	CHECK(h->phase == WBG_PHASE_FLUSHING && world.n_sub == 2, "populated 0 after the stop job: flushed again");
	CHECK(world.sub[1].purpose == FLUSH_FOR_EXIT, "populated 0 after the stop job: the exit recipe");
	CHECK(world.last_plan_inodes, "populated 0 after the stop job: its own inodes");
	job_done(id, 0);
	job_done(id, 0);
	CHECK(h->phase == WBG_PHASE_AWAITING_REMOVAL, "both flushes ended: it awaits its removal");
	removed(c);
	CHECK(lifecycle_watching(&lc, 860), "its removal: watched");
	teardown();
}

WORLD_MAIN(test_flush_then_removal, test_missed, test_still_dirty, test_bounds, test_stop_job)
