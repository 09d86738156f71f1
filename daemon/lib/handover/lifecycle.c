/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's engine: every entry point that moves a
 * handover, and the one loop that steps it (step(), the one place a phase
 * changes). A fact becomes an event in the decision files below
 * (lifecycle-event.c, -stall.c, -watch.c); the table says what follows
 * (handover-phase.h); carry_out() does it, and what that finds out (a watch
 * refused, a flush that started nothing) is the loop's next event, never a
 * step from inside a step. Here too: the flush's timeout, the cleanup and
 * verify batches every mode shares, and the end. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "lifecycle.h"
#include "lifecycle-internal.h"
#include "wbg-base.h"
#include "wbg-kernel.h"

void lifecycle_init(struct wbg_lifecycle *lc, const struct wbg_lifecycle_params *p, struct wbg_registry *reg,
		    const struct wbg_containers *containers, const struct wbg_lifecycle_world *world)
{
	*lc = (struct wbg_lifecycle){ .params = *p, .reg = reg, .containers = containers, .world = *world,
				      .mitigating = true };
	lc_end_init(lc);
}

const struct wbg_engine_stats *lc_engine_stats(const struct wbg_lifecycle *lc)
{
	return &lc->engine_stats;
}

void lifecycle_set_params(struct wbg_lifecycle *lc, const struct wbg_lifecycle_params *p)
{
	/* the table's bound applies to new entries; drain_after is the
	 * kernel's, read at start */
	uint64_t drain_after = lc->params.watch.drain_after_usec;

	lc->params = *p;
	lc->params.watch.drain_after_usec = drain_after;
}

void lifecycle_set_mitigating(struct wbg_lifecycle *lc, bool on)
{
	lc->mitigating = on;
}

/* The earliest of every deadline held, to the one timer. */
void lc_reschedule(struct wbg_lifecycle *lc)
{
	uint64_t next = lc_waiters_next_due(lc);

#define EARLIER(t) (next = (t) && (!next || (t) < next) ? (t) : next)
	for (const struct wbg_handover *h = lc->in_flight; h; h = h->in_flight_next)
		EARLIER(h->t_timeout);
	EARLIER(lc->cleanup_due);
	if (lc->verify_head)
		EARLIER(lc->verify_head->verify_due);
	EARLIER(lc_watch_next(lc));
	EARLIER(lc_stall_retry_due(lc));
#undef EARLIER
	if (next)
		lc->world.clock->schedule(lc->world.clock_data, next);
}

static void in_flight_remove(struct wbg_lifecycle *lc, struct wbg_handover *h)
{
	struct wbg_handover **p;

	for (p = &lc->in_flight; *p && *p != h; p = &(*p)->in_flight_next)
		;
	if (*p)
		*p = h->in_flight_next;
	h->in_flight_next = NULL;
}

/* The cleanup and verify batches: doubly linked, so that evidence can take
 * a handover off one. */
static void queue_push(struct wbg_handover **head, struct wbg_handover **tail, struct wbg_handover *h)
{
	h->queue_next = NULL;
	h->queue_prev = *tail;
	if (*tail)
		(*tail)->queue_next = h;
	else
		*head = h;
	*tail = h;
}

static void queue_unlink(struct wbg_handover **head, struct wbg_handover **tail, struct wbg_handover *h)
{
	if (h->queue_prev)
		h->queue_prev->queue_next = h->queue_next;
	else if (*head == h)
		*head = h->queue_next;
	else
		return; /* not on it */
	if (h->queue_next)
		h->queue_next->queue_prev = h->queue_prev;
	else
		*tail = h->queue_prev;
	h->queue_prev = h->queue_next = NULL;
}

/* Every job ended (or the flush timed out). */
static struct wbg_fact flush_over(struct wbg_lifecycle *lc, struct wbg_handover *h)
{
	h->t_flushed = lc_now(lc);
	lc_watch_flush_over(lc, h);
	if (!h->t_removed && h->trigger != WBG_TRIGGER_API && h->n_failed && !h->n_targets) {
		lc_settle(lc, h->cgroup_id, false); /* its removal is another handover */
		return fact(WBG_EVENT_FLUSHED, WBG_GUARD_NONE_STARTED);
	}
	return fact(WBG_EVENT_FLUSHED, 0); /* where it goes: the route's, and whether the cgroup is gone */
}

/* The actions of a cell: the watch table's and the waiters' as they
 * observe the step, the rest here; returns what they found out as the next
 * fact (LC_NO_FACT: nothing, or h ended and freed). */
static struct wbg_fact carry_out(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f,
				 enum wbg_phase from, unsigned actions, enum wbg_end end, struct wbg_plan *plan)
{
	const struct wbg_step_out out = { .h = h, .fact = f, .from = from, .actions = actions };
	uint64_t now = lc_now(lc);
	unsigned pending_before = h->n_pending;
	struct wbg_fact refused = actions & LC_WATCH_OBSERVES ? lc_watch_observe(lc, &out) : LC_NO_FACT;

	if (refused.event != LC_NO_EVENT)
		return refused; /* the rest is that fact's */
	if (actions & WBG_ACT_SUBMIT && plan && lc_submit(lc, h, plan) < 0) {
		handover_conclude(h, WBG_CAUSE_OUT_OF_MEMORY);
	}
	if (actions & WBG_ACT_FLUSH_ALL)
		lc_flush(lc, h, false);
	if (actions & WBG_ACT_FLUSH_INODES)
		lc_flush(lc, h, true);
	if (actions & WBG_ACT_SAVE_PENDING && plan) {
		h->plan_source = plan->source;
		lc_save_pending(lc, h, plan);
	}
	if (actions & WBG_ACT_SUBMIT && plan)
		lc_save_pending(lc, h, plan);
	if (actions & WBG_ACT_QUEUE_CLEANUP) {
		queue_push(&lc->cleanup_head, &lc->cleanup_tail, h);
		if (!lc->cleanup_due)
			lc->cleanup_due = now + WBG_CLEANUP_BATCH_USEC;
	}
	if (actions & WBG_ACT_QUEUE_VERIFY) {
		h->verify_due = now + WBG_VERIFY_DELAY_USEC;
		queue_push(&lc->verify_head, &lc->verify_tail, h);
	}
	if (actions & LC_WAITERS_OBSERVE)
		lc_waiters_observe(lc, &out);
	if (actions & WBG_ACT_END) {
		if (actions & WBG_ACT_KEEP_PENDING)
			h->pending_saved = false; /* kept: the next start redoes it */
		lc_end(lc, h, f, from, end);
		return LC_NO_FACT;
	}
	if (h->phase == WBG_PHASE_FLUSHING) {
		if (h->n_pending > pending_before || (h->n_pending && !h->t_timeout)) {
			/* every flush has its timeout (on-evidence flushes one
			 * handover more than once) */
			if (!h->t_first_flush)
				h->t_first_flush = now;
			if (!h->t_timeout)
				h->in_flight_next = lc->in_flight, lc->in_flight = h;
			h->t_timeout = now + lc->params.timeout_usec;
		} else if (h->n_pending == 0)
			return flush_over(lc, h); /* nothing was started after all */
	}
	if (h->watch)
		lc_watch_after(lc, h);
	return LC_NO_FACT;
}

/* The guards the handover itself holds: its route and its state. */
static unsigned state_guards(const struct wbg_handover *h)
{
	return wbg_route_guards(h->route) | (h->t_removed ? WBG_GUARD_GONE : 0) |
	       (h->was_watched ? WBG_GUARD_WAS_WATCHED : 0);
}

/* The one place a phase changes: handover_step()'s answer to the fact,
 * carried out; returns the fact its actions found out. */
static struct wbg_fact step(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f,
			    struct wbg_plan *plan)
{
	enum wbg_phase from = h->phase;
	struct wbg_step s;

	f.guards |= state_guards(h);
	s = handover_step(from, f.event, f.guards);

	if (from == WBG_PHASE_ENDED)
		return LC_NO_FACT;
	if (s.invalid) {
		lc->engine_stats.invalid_steps++;
		log_warning("handover %" PRIu64 " of %s: event %s (guards 0x%x) in phase %s must not happen; ended",
			    h->id, h->path, wbg_event_to_string(f.event), f.guards, wbg_phase_to_string(from));
		handover_conclude(h, WBG_CAUSE_INVALID_STEP);
	} else
		log_debug("handover %" PRIu64 ": %s --%s (guards 0x%x)--> %s", h->id, wbg_phase_to_string(from),
			  wbg_event_to_string(f.event), f.guards, wbg_phase_to_string(s.next));
	/* leaving a phase leaves its list */
	if (from == WBG_PHASE_FLUSHING && s.next != from) {
		in_flight_remove(lc, h);
		h->t_timeout = 0;
	}
	if (from == WBG_PHASE_CLEANUP && s.next != from)
		queue_unlink(&lc->cleanup_head, &lc->cleanup_tail, h);
	if (from == WBG_PHASE_VERIFY && s.next != from)
		queue_unlink(&lc->verify_head, &lc->verify_tail, h);
	h->phase = s.next;
	return carry_out(lc, h, f, from, s.actions, s.end, plan);
}

/* step() until the facts run out (lifecycle-internal.h). */
void lc_run(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f, struct wbg_plan *plan)
{
	while (f.event != LC_NO_EVENT) {
		f = step(lc, h, f, plan);
		plan = NULL;
	}
}

/* One scratch memcg cycle for every handover queued since the last: its
 * removal makes the kernel re-run its offline-wb cleanup, which covers
 * every dying wb, not only the one it was run for. */
static void run_cleanup(struct wbg_lifecycle *lc)
{
	struct wbg_handover *h = lc->cleanup_head;
	bool done = false;
	uint64_t now;
	int r;

	lc->cleanup_due = 0;
	if (!h)
		return;
	r = lc->world.kernel->cleanup(lc->world.kernel_data);
	if (r >= 0) {
		lc->engine_stats.cleanup_cycles++;
		done = true;
	} else if (r != -EOPNOTSUPP) {
		lc->engine_stats.cleanup_failures++;
		log_warning_errno(r, "Scratch memcg cycle (for %s and the handovers with it) failed", h->path);
	}
	now = lc_now(lc);
	while ((h = lc->cleanup_head)) {
		if (done) {
			h->cleanup_done = true;
			h->t_cleanup = now;
		}
		lc_run(lc, h, fact(WBG_EVENT_CLEANED, 0), NULL); /* off the batch, onto the next */
	}
}

/* The verify batch's handovers that are due: one read of wb_stats says for
 * all of them whether a dying wb of theirs still has dirty IO. */
static void run_verify(struct wbg_lifecycle *lc, uint64_t now)
{
	struct wbg_wb_census c = { 0 };
	int r = lc->world.kernel->census(lc->world.kernel_data, &c);

	if (r == -ENOMEM)
		log_oom();
	while (lc->verify_head && lc->verify_head->verify_due <= now) {
		struct wbg_handover *h = lc->verify_head;

		lc_run(lc, h, lc_watch_verified(lc, h, lc_wb_look(r, &c, h->cgroup_id), now), NULL);
	}
	if (r >= 0)
		wbstats_census_done(&c);
}

static void timed_out(struct wbg_lifecycle *lc, struct wbg_handover *h)
{
	log_warning("Flush for %s did not finish in %.1f s", h->path, (double)lc->params.timeout_usec / 1e6);
	/* a worker still inside it goes on waiting for the kernel, and
	 * another thread takes its place */
	lc->world.flusher->timed_out(lc->world.flusher_data);
	handover_conclude(h, WBG_CAUSE_TIMEOUT);
	h->n_pending = 0;
	lc_run(lc, h, flush_over(lc, h), NULL);
}

/* Drains, max ages and evidence due in the watch table: the events they
 * are. */
static void watch_tick(struct wbg_lifecycle *lc, uint64_t now)
{
	struct wbg_wb_census c = { 0 };
	int r;

	if (lc_watch_count(lc) == 0)
		return;
	r = lc->world.kernel->census(lc->world.kernel_data, &c);
	/* backwards: a step that ends one moves the last entry, already
	 * looked at, into its place */
	for (size_t i = lc_watch_count(lc); i-- > 0;) {
		struct wbg_handover *h = lc_watch_nth(lc, i);

		if (h)
			lc_run(lc, h, lc_watch_due(lc, h, lc_wb_look(r, &c, h->cgroup_id), now), NULL);
	}
	if (r >= 0)
		wbstats_census_done(&c);
	if (lc_watch_count(lc))
		lc_watch_at(lc, now + LC_WATCH_TICK_USEC);
}

void lifecycle_tick(struct wbg_lifecycle *lc)
{
	uint64_t now = lc_now(lc);
	struct wbg_handover *h;

	/* one at a time: a timeout's consequences may change the list */
	do {
		for (h = lc->in_flight; h && h->t_timeout > now; h = h->in_flight_next)
			;
		if (h)
			timed_out(lc, h);
	} while (h);
	lc_waiters_expire(lc, now);
	if (lc->cleanup_due && lc->cleanup_due <= now)
		run_cleanup(lc);
	if (lc->verify_head && lc->verify_head->verify_due <= now)
		run_verify(lc, now);
	if (lc_stall_retry_due(lc) && lc_stall_retry_due(lc) <= now)
		lc_stall_retry(lc, now);
	if (lc_watch_take_due(lc, now))
		watch_tick(lc, now);
	lc_reschedule(lc);
}

void lifecycle_job_done(struct wbg_lifecycle *lc, const struct flush_job *j)
{
	if (j->result < 0)
		log_warning_errno(j->result, "Flush of %s (%s) failed", j->mount[0] ? j->mount : "block device", j->fstype);
	for (size_t i = 0; i < j->n_waiters; i++) {
		struct wbg_handover *h = lc_find(lc, handover_waiter_id(j->waiters[i]));

		/* timed out meanwhile: an earlier round's, not this one's */
		if (!h || h->n_pending == 0 || !handover_waiter_current(h, j->waiters[i])) {
			if (h)
				lc->engine_stats.late_jobs++;
			continue;
		}
		handover_job_done(h, j);
		if (h->n_pending == 0)
			lc_run(lc, h, flush_over(lc, h), NULL);
	}
	lc_reschedule(lc);
}

uint64_t lifecycle_event(struct wbg_lifecycle *lc, struct wbg_cgroup *c, enum wbg_trigger trigger)
{
	struct wbg_handover *h = c->handover;
	const uint64_t cgroup_id = c->id;
	const bool removal =
		trigger == WBG_TRIGGER_REMOVED || trigger == WBG_TRIGGER_RESCAN || trigger == WBG_TRIGGER_RMDIR_BPF;
	struct wbg_report_facts f = {
		.in_scope = c->in_scope,
		.populated = c->populated,
		.removed = c->removed,
		/* what only the rmdir tracepoint's reports ask */
		.tracked = trigger == WBG_TRIGGER_RMDIR_BPF && registry_find_id(lc->reg, cgroup_id),
		.handover = h != NULL,
		.recent = trigger == WBG_TRIGGER_RMDIR_BPF && lifecycle_recently_started(lc, cgroup_id),
		.settled = lc_settled(lc, cgroup_id),
	};
	enum wbg_merge merge = handover_merge_report(trigger, f);
	struct wbg_plan plan = { 0 };
	struct wbg_fact ev;
	uint64_t id = 0;

	if (merge == WBG_MERGE_DROP) {
		log_debug("%s of cgroup %" PRIu64 ": nothing to add (another report covers it, or it is out of scope)",
			  wbg_trigger_to_string(trigger), cgroup_id);
		return 0;
	}
	if (merge == WBG_MERGE_SETTLED)
		lc_settle(lc, cgroup_id, false); /* gone: its mark with it */
	else if (merge == WBG_MERGE_MOVE_ON && h) {
		/* an EMPTIED replan flushes the same targets again: counted
		 * once (h lives on: a flush runs or its removal is to come) */
		unsigned t = h->n_targets, fs = h->n_fs, in = h->n_inode_targets, bd = h->n_bdev;

		ev = lc_event_move_on(lc, c, h, trigger, &plan);
		lc_run(lc, h, ev, &plan);
		if (ev.event == WBG_EVENT_EMPTIED)
			h->n_targets = t, h->n_fs = fs, h->n_inode_targets = in, h->n_bdev = bd;
	} else {
		ev = lc_event_start(lc, c, trigger, &h, &plan);
		if (h) {
			id = h->id;
			lc_run(lc, h, ev, &plan);
		}
		/* a removal already seen (the rmdir came first): watched at once */
		if (id && (h = lc_find(lc, id)) && h->phase == WBG_PHASE_DEFERRED && h->t_removed)
			lc_run(lc, h, fact(WBG_EVENT_REMOVED, 0), NULL);
	}
	plan_free(&plan);
	/* the removal seen: what it dirtied is forgotten unless a handover of
	 * it still needs it (that handover's end forgets it) */
	if (removal)
		lc_forget_dirtied(lc, cgroup_id, WBG_FORGET_REMOVED, true, false);
	lc_reschedule(lc);
	return id;
}

void lifecycle_repopulated(struct wbg_lifecycle *lc, struct wbg_cgroup *c)
{
	struct wbg_handover *h = c->handover;
	struct wbg_fact ev = lc_event_repopulated(lc, c, h);

	if (ev.event == LC_NO_EVENT)
		return;
	lc_run(lc, h, ev, NULL);
	lc_reschedule(lc);
}

static int evidence(struct wbg_lifecycle *lc, struct wbg_handover *h, const struct wbg_inode_key *inode)
{
	struct wbg_fact ev = lc_watch_evidence(lc, h, inode, lc_now(lc));

	lc_run(lc, h, ev, NULL);
	return !!(ev.guards & WBG_GUARD_SOON);
}

int lifecycle_stall(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, dev_t bdi_dev, bool in_scope)
{
	struct wbg_plan plan = { 0 };
	struct wbg_handover *h;
	uint64_t id;
	int r = lc_stall_admit(lc, cgroup_id, path, bdi_dev, in_scope, lc_now(lc));

	if (r <= 0) {
		lc_reschedule(lc); /* a capped one's retry */
		return r;
	}
	h = lc_start(lc, cgroup_id, path && *path ? path : "", WBG_TRIGGER_STALL);
	if (!h)
		return -ENOMEM;
	id = h->id;
	lc_run(lc, h, lc_stall_plan(lc, h, bdi_dev, &plan), &plan);
	plan_free(&plan);
	/* deferred: its cgroup is gone already, so watched at once */
	if ((h = lc_find(lc, id)) && h->phase == WBG_PHASE_DEFERRED) {
		lc_run(lc, h, fact(WBG_EVENT_REMOVED, 0), NULL);
		/* its first evidence is the stall itself, flushed as the
		 * evidence cap allows (or by the tick, when it refills) */
		h = lc_find(lc, id);
		if (h && h->phase == WBG_PHASE_WATCHED)
			(void)evidence(lc, h, NULL);
	}
	lc_reschedule(lc);
	return 1;
}

int lifecycle_evidence(struct wbg_lifecycle *lc, uint64_t cgroup_id, const struct wbg_inode_key *inode,
		       const char **ret_path)
{
	struct wbg_handover *h = lc_watch_for_evidence(lc, cgroup_id);
	int soon;

	if (!h)
		return -ENOENT;
	*ret_path = h->path;
	soon = evidence(lc, h, inode);
	lc_reschedule(lc);
	return soon;
}

void lifecycle_released(struct wbg_lifecycle *lc, uint64_t cgroup_id)
{
	struct wbg_handover *h = lc_watch_find(lc, cgroup_id);

	if (!h)
		return;
	lc_run(lc, h, lc_watch_released(h), NULL);
	lc_reschedule(lc);
}

int lifecycle_recover(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, const dev_t *devs,
		      const bool *bdev, size_t n, uint64_t *ret_id)
{
	struct wbg_handover *h = lc_start(lc, cgroup_id, path, WBG_TRIGGER_RECOVERED);
	struct wbg_plan plan = { 0 };
	uint64_t id;

	if (!h)
		return -ENOMEM;
	id = h->id;
	lc_run(lc, h, lc_event_recovered(lc, h, devs, bdev, n, &plan), &plan);
	plan_free(&plan);
	lc_reschedule(lc);
	*ret_id = id;
	return 0;
}

static void count_active(const void *nodep, VISIT which, void *closure)
{
	if (which == postorder || which == leaf)
		++*(size_t *)closure;
}

static void collect_active(const void *nodep, VISIT which, void *closure)
{
	struct wbg_handover ***v = closure;

	if (which == postorder || which == leaf)
		*(*v)++ = *(struct wbg_handover *const *)nodep;
}

void lifecycle_stop(struct wbg_lifecycle *lc)
{
	size_t n = 0;
	struct wbg_handover **v, **p;

	if (!lc->world.clock)
		return; /* never initialized: nothing began */
	lc_waiters_stop(lc);
	/* Every handover still open is recorded as it stands, in one pass
	 * (a step may end and free it: collected first). */
	lc_active_walk(lc, count_active, &n);
	v = calloc(n + 1, sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	p = v;
	if (v) {
		lc_active_walk(lc, collect_active, &p);
		for (struct wbg_handover **q = v; q < p; q++)
			lc_run(lc, *q, fact(WBG_EVENT_STOP, 0), NULL); /* the cell says how it ends */
		free(v);
	} else
		log_oom();
	lc->cleanup_head = lc->cleanup_tail = lc->verify_head = lc->verify_tail = NULL;
	lc->cleanup_due = 0;
	lc_watch_clear(lc);
	lc_active_clear(lc);
	lc_recent_clear(lc);
}
