/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Between the files of the handover lifecycle (lifecycle.h) only.
 *
 * The files are layered, and calls go down only:
 *   lifecycle-api.c     the API's flush requests (above the engine)
 *   lifecycle.c         the engine: every entry point, the one step loop
 *   lifecycle-event.c, lifecycle-stall.c, lifecycle-watch.c
 *                       decisions: what a fact means, as the event it is
 *   lifecycle-flush.c, lifecycle-waiters.c, lifecycle-active.c
 *                       what the actions use: plans submitted, waiters and
 *                       the recent ring, the set of handovers in progress
 * Only the engine changes a phase; the files below it return events and
 * never step. */
#pragma once

#include <search.h>

#include "lifecycle.h"

/* No event: a decision that found nothing to say. */
#define LC_NO_EVENT _WBG_EVENT_MAX
#define LC_NO_FACT ((struct wbg_fact){ .event = LC_NO_EVENT })

static inline struct wbg_fact fact(enum wbg_event event, unsigned guards)
{
	return (struct wbg_fact){ .event = event, .guards = guards };
}

static inline uint64_t lc_now(const struct wbg_lifecycle *lc)
{
	return lc->world.clock->now(lc->world.clock_data);
}

/* What one step did, for the parts that observe it: the watch table and
 * the waiters. */
struct wbg_step_out {
	struct wbg_handover *h;
	struct wbg_fact fact; /* the fact stepped, with every guard that held */
	enum wbg_phase from;  /* h->phase is where it went */
	unsigned actions;
};

/* lifecycle-end.c: h ends as its cell says (from: the phase it left):
 * its outcome, then counted, recorded, answered and freed. */
void lc_end(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f, enum wbg_phase from,
	    enum wbg_end end);

/* The earliest deadline held, to ops->schedule; after every change
 * (lifecycle.c). */
void lc_reschedule(struct wbg_lifecycle *lc);
/* A fact's event, and every event its actions lead to, one cell at a
 * time (lifecycle.c: the engine's loop over its step). plan: what the
 * first event's WBG_ACT_SUBMIT and WBG_ACT_SAVE_PENDING take. h may be
 * freed when it returns. The engine's entry points call it; the files
 * below never do (they return events): the folder's tests drive a cell
 * through it. */
void lc_run(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f, struct wbg_plan *plan);

/* lifecycle-active.c: the handovers in progress. */
/* Whether a cgroup's going-away is recorded already (a handover ended at
 * populated 0): its removal then starts none. */
void lc_settle(struct wbg_lifecycle *lc, uint64_t cgroup_id, bool settled);
/* Every handover in progress, in id order (twalk_r's visit). */
void lc_active_walk(const struct wbg_lifecycle *lc, void (*fn)(const void *node, VISIT which, void *data), void *data);
/* At the stop, every handover ended: the cgroups' marks go. */
void lc_active_clear(struct wbg_lifecycle *lc);
bool lc_settled(const struct wbg_lifecycle *lc, uint64_t cgroup_id);
/* handover_forget_dirtied's decision over the lifecycle's facts, carried out */
void lc_forget_dirtied(struct wbg_lifecycle *lc, uint64_t cgroup_id, enum wbg_forget_moment when, bool removed,
		       bool was_watched);
struct wbg_handover *lc_find(const struct wbg_lifecycle *lc, uint64_t id);
/* A new handover, in the set (NULL: out of memory, logged). */
struct wbg_handover *lc_start(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger);
/* Out of the set, at its end; false if it was not in it. */
bool lc_finish(struct wbg_lifecycle *lc, struct wbg_handover *h);

/* lifecycle-flush.c: plans to the pool. */
/* The plan's targets to the pool, and the handover's record of them. */
int lc_submit(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_plan *plan);
/* On disk while its flush runs or its removal is watched. */
void lc_save_pending(struct wbg_lifecycle *lc, struct wbg_handover *h, const struct wbg_plan *plan);
/* Plans and submits its flush now (inodes: its own inodes, the evidence
 * flush). */
void lc_flush(struct wbg_lifecycle *lc, struct wbg_handover *h, bool inodes);

/* lifecycle-waiters.c: the API's waiters and the recent ring. */
/* The waiters' part of a step: ANSWER (the flush is over: they hear what
 * it came to; a watched handover's outcome waits for its end). The engine
 * shows them the steps that name an action of theirs only. */
#define LC_WAITERS_OBSERVE WBG_ACT_ANSWER
void lc_waiters_observe(struct wbg_lifecycle *lc, const struct wbg_step_out *o);
void lc_reply_waiters(struct wbg_lifecycle *lc, const struct wbg_handover *h, const char *outcome);
uint64_t lc_waiters_next_due(const struct wbg_lifecycle *lc);
void lc_waiters_expire(struct wbg_lifecycle *lc, uint64_t now);
/* call waits for h's flush, at most timeout_usec; -EBUSY: its tenant's
 * share (or the table) is full; -ENOMEM. */
int lc_waiter_add(struct wbg_lifecycle *lc, const struct wbg_handover *h, void *call, uint64_t timeout_usec);
/* Stopping: every waiter answered "pending". */
void lc_waiters_stop(struct wbg_lifecycle *lc);
void lc_remember(struct wbg_lifecycle *lc, const struct wbg_handover *h, const char *json);
/* By id, or else by path; newest first. */
const struct wbg_recent *lc_recent_by(const struct wbg_lifecycle *lc, uint64_t id, const char *path);
void lc_recent_clear(struct wbg_lifecycle *lc);

/* lifecycle-event.c: a cgroup's news as an event. */
/* A new handover for c's news (*ret_h; NULL: none, the news covered
 * already or no memory), and the event that starts it; plan: what it
 * flushes. */
struct wbg_fact lc_event_start(struct wbg_lifecycle *lc, struct wbg_cgroup *c, enum wbg_trigger trigger,
			      struct wbg_handover **ret_h, struct wbg_plan *plan);
/* An existing handover's next event: populated 0 after a stop job (plan:
 * what it wrote since), or its directory gone; LC_NO_EVENT: no news. */
struct wbg_fact lc_event_move_on(struct wbg_lifecycle *lc, struct wbg_cgroup *c, struct wbg_handover *h,
				enum wbg_trigger trigger, struct wbg_plan *plan);
/* In use again: REPOPULATED, or LC_NO_EVENT while its flush runs. */
struct wbg_fact lc_event_repopulated(struct wbg_lifecycle *lc, struct wbg_cgroup *c, struct wbg_handover *h);

/* A recovered handover's first event (plan: what its record named). */
struct wbg_fact lc_event_recovered(struct wbg_lifecycle *lc, struct wbg_handover *h, const dev_t *devs, const bool *bdev,
				  size_t n, struct wbg_plan *plan);

/* lifecycle-stall.c: the stall itself as evidence. */
/* 1: a stall handover is to start; else what lifecycle_stall() returns
 * (counted). */
int lc_stall_admit(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, dev_t bdi_dev, bool in_scope,
		   uint64_t now);
/* Its first event: DIRTY with plan (its route: watch), or NOTHING (why, in h). */
struct wbg_fact lc_stall_plan(struct wbg_lifecycle *lc, struct wbg_handover *h, dev_t bdi_dev, struct wbg_plan *plan);
/* Re-arms the capped stalls whose time has come; when the next one's
 * comes (0: none). */
void lc_stall_retry(struct wbg_lifecycle *lc, uint64_t now);
uint64_t lc_stall_retry_due(const struct wbg_lifecycle *lc);

/* lifecycle-watch.c: the watch table. */
/* The watch table's part of a step: a flush of a watched one counted,
 * WATCH (a refusal is the next fact: WATCH_REFUSED), ARM_STALL, UNWATCH,
 * NOTE_EVIDENCE; LC_NO_FACT when nothing was refused. The engine shows
 * it the steps that name an action of its own only. */
#define LC_WATCH_OBSERVES                                                                             \
	(WBG_ACT_FLUSH_ALL | WBG_ACT_FLUSH_INODES | WBG_ACT_WATCH | WBG_ACT_ARM_STALL | WBG_ACT_NOTE_EVIDENCE | \
	 WBG_ACT_UNWATCH)
struct wbg_fact lc_watch_observe(struct wbg_lifecycle *lc, const struct wbg_step_out *o);
/* After a step that did not end a watched h: its noted evidence is looked
 * at reflush_sec after its last flush. */
void lc_watch_after(struct wbg_lifecycle *lc, const struct wbg_handover *h);
/* A watched one ends, however: how its watch went, counted. */
void lc_watch_ended(struct wbg_lifecycle *lc, const struct wbg_handover *h);
/* Its outcome, when its ending cell says the watch's (WBG_END_WATCHED):
 * drained by itself, else its flushes'; one already recorded stays. */
void lc_watch_outcome(struct wbg_handover *h, struct wbg_fact f);
/* The watch's next look at usec, or sooner. */
void lc_watch_at(struct wbg_lifecycle *lc, uint64_t usec);
/* Its next look (0: none); whether that is due by now (then unset). */
uint64_t lc_watch_next(const struct wbg_lifecycle *lc);
bool lc_watch_take_due(struct wbg_lifecycle *lc, uint64_t now);
/* The handovers watched, by index (a step may end one: the last moves into
 * its place). */
size_t lc_watch_count(const struct wbg_lifecycle *lc);
struct wbg_handover *lc_watch_nth(const struct wbg_lifecycle *lc, size_t i);
/* A watched handover's flush over: a failed or timed-out one counted. */
void lc_watch_flush_over(struct wbg_lifecycle *lc, const struct wbg_handover *h);
/* The watched handover evidence is for; none counted as ignored. */
struct wbg_handover *lc_watch_for_evidence(struct wbg_lifecycle *lc, uint64_t cgroup_id);
/* At the stop: the table emptied. */
void lc_watch_clear(struct wbg_lifecycle *lc);
/* The parts' counters, each kept by its owner, and the metric families
 * the watch and the waiters render (lifecycle_metrics() renders them in
 * turn). */
const struct wbg_engine_stats *lc_engine_stats(const struct wbg_lifecycle *lc);
const struct wbg_event_stats *lc_event_stats(const struct wbg_lifecycle *lc);
const struct wbg_plan_stats *lc_plan_stats(const struct wbg_lifecycle *lc);
const struct wbg_end_stats *lc_end_stats(const struct wbg_lifecycle *lc);
const struct wbg_stall_stats *lc_stall_stats(const struct wbg_lifecycle *lc);
const struct wbg_watch_stats *lc_watch_stats(const struct wbg_lifecycle *lc);
/* The end's histograms' buckets (at lifecycle_init). */
void lc_end_init(struct wbg_lifecycle *lc);
void lc_watch_metrics(FILE *f, const struct wbg_lifecycle *lc);
void lc_waiters_metrics(FILE *f, const struct wbg_lifecycle *lc);
/* The recent ring's slot i (< WBG_RECENT_MAX, in no order): its path, or
 * NULL. */
const char *lc_recent_path(const struct wbg_lifecycle *lc, size_t i);
struct wbg_handover *lc_watch_find(const struct wbg_lifecycle *lc, uint64_t cgroup_id);
/* What one wb_stats read said of a cgroup's wbs: known (it could say),
 * dirty (one has dirty IO), listed (one is still on the list: inodes still
 * attached to it). */
struct wbg_wb_look {
	bool known, dirty, listed;
};
struct wbg_wb_look lc_wb_look(int census_result, const struct wbg_wb_census *c, uint64_t cgroup_id);
/* A watched one at the tick: a drain, a flush due, its max age, or
 * LC_NO_FACT. */
struct wbg_fact lc_watch_due(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_wb_look w, uint64_t now);
/* Evidence for a watched one: EVIDENCE, [soon] when not now (a flush
 * runs, the last was too recent, or the cap is used up). */
struct wbg_fact lc_watch_evidence(struct wbg_lifecycle *lc, struct wbg_handover *h, const struct wbg_inode_key *inode,
				 uint64_t now);
struct wbg_fact lc_watch_released(struct wbg_handover *h);
/* After the verify batch's wb_stats read: the event that follows. */
struct wbg_fact lc_watch_verified(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_wb_look w, uint64_t now);
