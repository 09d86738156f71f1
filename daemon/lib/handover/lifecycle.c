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
#include <json-c/json.h>

#include "lifecycle.h"
#include "lifecycle-internal.h"
#include "log.h"
#include "macro.h"
#include "wbstats.h"

void lifecycle_init(struct wbg_lifecycle *hs, const struct wbg_lifecycle_params *p, struct wbg_registry *reg,
		    const struct wbg_containers *containers, const struct wbg_lifecycle_ops *ops, void *userdata)
{
	static const double reaction[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5 };
	static const double duration[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60 };

	*hs = (struct wbg_lifecycle){ .params = *p, .reg = reg, .containers = containers, .ops = ops,
				      .userdata = userdata, .mitigating = true };
	hist_init(&hs->reaction, reaction, ELEMENTSOF(reaction));
	hist_init(&hs->flush_duration, duration, ELEMENTSOF(duration));
}

void lifecycle_open_ids(struct wbg_lifecycle *hs, const char *dir, uint64_t floor)
{
	ids_open(&hs->ids, dir, floor);
}

void lifecycle_set_params(struct wbg_lifecycle *hs, const struct wbg_lifecycle_params *p)
{
	/* the table's bound applies to new entries; drain_after is the
	 * kernel's, read at start */
	uint64_t drain_after = hs->params.watch.drain_after_usec;

	hs->params = *p;
	hs->params.watch.drain_after_usec = drain_after;
}

void lifecycle_set_mitigating(struct wbg_lifecycle *hs, bool on)
{
	hs->mitigating = on;
}

/* The earliest of every deadline held, to the one timer. */
void hs_reschedule(struct wbg_lifecycle *hs)
{
	uint64_t next = hs_waiters_next_due(hs);

#define EARLIER(t) (next = (t) && (!next || (t) < next) ? (t) : next)
	for (const struct wbg_handover *h = hs->in_flight; h; h = h->in_flight_next)
		EARLIER(h->t_timeout);
	EARLIER(hs->cleanup_due);
	if (hs->verify_head)
		EARLIER(hs->verify_head->verify_due);
	EARLIER(hs->watch_due);
	EARLIER(hs_stall_retry_due(hs));
#undef EARLIER
	if (next)
		hs->ops->clock->schedule(hs->userdata, next);
}

static void in_flight_remove(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	struct wbg_handover **p;

	for (p = &hs->in_flight; *p && *p != h; p = &(*p)->in_flight_next)
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

/* The end of a handover: counted, recorded, answered, freed. */
static void retire(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	struct wbg_cgroup *c = registry_find_id(hs->reg, h->cgroup_id);
	struct wbg_container_names names;
	struct json_object *o;
	const char *json;

	if (h->outcome == WBG_OUTCOME_PENDING)
		h->outcome = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
	if (c && c->handover == h)
		c->handover = NULL;
	if (h->t_first_flush) {
		/* on-evidence, the reaction is to the evidence, not to the
		 * removal that came long before it */
		uint64_t from = h->t_evidence && h->t_evidence <= h->t_first_flush ? h->t_evidence : h->t_trigger;

		hist_observe(&hs->reaction, (double)(h->t_first_flush - from) / 1e6);
		if (h->t_flushed)
			hist_observe(&hs->flush_duration, (double)(h->t_flushed - h->t_first_flush) / 1e6);
	}
	hs->stats.flushed_device_bytes += h->device_bytes;
	(void)hs_finish(hs, h);
	/* what a removed cgroup dirtied was kept while a handover of it ran
	 * (a flush that outlives the rmdir still needs it on evidence); a
	 * watched one's went at its unwatching */
	if (h->t_removed && !h->was_watched && !lifecycle_cgroup_active(hs, h->cgroup_id))
		hs->ops->kernel->forget(hs->userdata, h->cgroup_id);
	/* its next stall is news again (unwatching forgot a watched one),
	 * unless nothing could be flushed for it: then a report at every
	 * failed flush would only repeat this end */
	if (h->trigger == WBG_TRIGGER_STALL && !h->was_watched && h->outcome != WBG_OUTCOME_NO_TARGETS &&
	    h->outcome != WBG_OUTCOME_FAILED)
		hs->ops->kernel->disarm(hs->userdata, h->cgroup_id);
	if (h->pending_saved)
		hs->ops->flusher->pending_drop(hs->userdata, h->id);
	hs->stats.by[h->trigger][h->outcome]++;
	containers_names(hs->containers, h->path, &names);
	o = handover_to_json(h, &names);
	json = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
	if (!json)
		log_oom();
	hs->ops->audience->ended(hs->userdata, h, json ? json : "{}");
	hs_reply_waiters(hs, h, wbg_outcome_to_string(h->outcome));
	hs_remember(hs, h, json ? json : "{}");
	json_object_put(o);
	handover_free(h);
}

/* Every job ended (or the flush timed out): the event by where the cgroup
 * is. */
static enum wbg_event flush_over(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	h->t_flushed = hs_now(hs);
	if (h->watch && (h->n_failed || h->outcome == WBG_OUTCOME_TIMEOUT))
		hs->watch_stats.flush_failures++;
	if (!h->t_removed && h->trigger != WBG_TRIGGER_API && h->n_failed && !h->n_targets) {
		struct wbg_cgroup *c = registry_find_id(hs->reg, h->cgroup_id);

		if (c)
			c->settled = false; /* its removal is another handover */
		return WBG_EVENT_NONE_STARTED;
	}
	return h->t_removed && h->exit_recipe && !h->was_watched ? WBG_EVENT_FLUSHED_GONE_WATCH
	       : h->t_removed					 ? WBG_EVENT_FLUSHED_GONE
	       : h->trigger == WBG_TRIGGER_API			 ? WBG_EVENT_FLUSHED_ASKED
								 : WBG_EVENT_FLUSHED;
}

/* The actions of a cell, in their order; returns what they found out as
 * the next event (HS_NO_EVENT: nothing, or h ended and freed). */
static enum wbg_event carry_out(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event,
				unsigned actions, struct wbg_plan *plan)
{
	uint64_t now = hs_now(hs);
	unsigned pending_before = h->n_pending;

	if (actions & (WBG_ACT_FLUSH_ALL | WBG_ACT_FLUSH_INODES) && h->watch) {
		h->flushes++;
		hs->watch_stats.flushes++;
		h->t_last_flush = now;
		h->evidence_pending = h->quiet = false;
	}
	if (actions & WBG_ACT_SUBMIT && plan && hs_submit(hs, h, plan) < 0) {
		h->outcome = WBG_OUTCOME_FAILED;
		h->reason = "out of memory";
	}
	if (actions & WBG_ACT_FLUSH_ALL)
		hs_flush(hs, h, false);
	if (actions & WBG_ACT_FLUSH_INODES)
		hs_flush(hs, h, true);
	if (actions & WBG_ACT_SAVE_PENDING && plan) {
		h->plan_source = plan->source;
		hs_save_pending(hs, h, plan);
	}
	if (actions & WBG_ACT_SUBMIT && plan)
		hs_save_pending(hs, h, plan);
	if (actions & WBG_ACT_WATCH && hs_watch_add(hs, h) < 0)
		return WBG_EVENT_WATCH_REFUSED; /* the rest is that event's */
	/* after a flush of ours, only the stall is news (the writer's every
	 * dirtying would be); before any (drained, or the exit recipe's
	 * flush not enough), a live cgroup's first dirtying still is */
	if (actions & WBG_ACT_ARM_STALL && h->watch)
		(void)hs->ops->kernel->arm(hs->userdata, h->cgroup_id, h->flushes > 0);
	if (actions & WBG_ACT_NOTE_EVIDENCE)
		h->evidence_pending = true;
	if (actions & WBG_ACT_QUEUE_CLEANUP) {
		queue_push(&hs->cleanup_head, &hs->cleanup_tail, h);
		if (!hs->cleanup_due)
			hs->cleanup_due = now + WBG_CLEANUP_BATCH_USEC;
	}
	if (actions & WBG_ACT_QUEUE_VERIFY) {
		h->verify_due = now + WBG_VERIFY_DELAY_USEC;
		queue_push(&hs->verify_head, &hs->verify_tail, h);
	}
	if (actions & WBG_ACT_ANSWER)
		hs_answer(hs, h);
	if (actions & WBG_ACT_END && h->was_watched)
		hs_watch_outcome(hs, h, event);
	if (actions & WBG_ACT_UNWATCH)
		hs_watch_remove(hs, h, event);
	if (actions & WBG_ACT_KEEP_PENDING)
		h->pending_saved = false; /* kept: the next start redoes it */
	if (actions & WBG_ACT_END) {
		retire(hs, h);
		return HS_NO_EVENT;
	}
	if (h->phase == WBG_PHASE_FLUSHING) {
		if (h->n_pending > pending_before || (h->n_pending && !h->t_timeout)) {
			/* every flush has its timeout (on-evidence flushes one
			 * handover more than once) */
			if (!h->t_first_flush)
				h->t_first_flush = now;
			if (!h->t_timeout)
				h->in_flight_next = hs->in_flight, hs->in_flight = h;
			h->t_timeout = now + hs->params.timeout_usec;
		} else if (h->n_pending == 0)
			return flush_over(hs, h); /* nothing was started after all */
	}
	if (h->watch && h->evidence_pending && h->phase != WBG_PHASE_FLUSHING)
		hs_watch_at(hs, h->t_last_flush + hs->params.watch.reflush_usec);
	return HS_NO_EVENT;
}

/* The one place a phase changes: handover_step()'s answer to event,
 * carried out; returns the event its actions found out. */
static enum wbg_event step(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event,
			   struct wbg_plan *plan)
{
	enum wbg_phase from = h->phase;
	struct wbg_step s = handover_step(from, event);

	if (from == WBG_PHASE_ENDED)
		return HS_NO_EVENT;
	if (s.invalid) {
		hs->stats.invalid_steps++;
		log_warning("handover %" PRIu64 " of %s: event %s in phase %s must not happen; ended", h->id, h->path,
			    wbg_event_to_string(event), wbg_phase_to_string(from));
		if (h->outcome == WBG_OUTCOME_PENDING)
			h->outcome = WBG_OUTCOME_FAILED;
		h->reason = "lifecycle: an event its phase must not see (logged)";
	} else
		log_debug("handover %" PRIu64 ": %s --%s--> %s", h->id, wbg_phase_to_string(from),
			  wbg_event_to_string(event), wbg_phase_to_string(s.next));
	/* leaving a phase leaves its list */
	if (from == WBG_PHASE_FLUSHING && s.next != from) {
		in_flight_remove(hs, h);
		h->t_timeout = 0;
	}
	if (from == WBG_PHASE_CLEANUP && s.next != from)
		queue_unlink(&hs->cleanup_head, &hs->cleanup_tail, h);
	if (from == WBG_PHASE_VERIFY && s.next != from)
		queue_unlink(&hs->verify_head, &hs->verify_tail, h);
	h->phase = s.next;
	return carry_out(hs, h, event, s.actions, plan);
}

/* A fact's event, and every event its actions lead to, one cell at a
 * time. plan: what the first event's WBG_ACT_SUBMIT and
 * WBG_ACT_SAVE_PENDING take. h may be freed when it returns. */
static void run(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event, struct wbg_plan *plan)
{
	while (event != HS_NO_EVENT) {
		event = step(hs, h, event, plan);
		plan = NULL;
	}
}

/* One scratch memcg cycle for every handover queued since the last: its
 * removal makes the kernel re-run its offline-wb cleanup, which covers
 * every dying wb, not only the one it was run for. */
static void run_cleanup(struct wbg_lifecycle *hs)
{
	struct wbg_handover *h = hs->cleanup_head;
	bool done = false;
	uint64_t now;
	int r;

	hs->cleanup_due = 0;
	if (!h)
		return;
	r = hs->ops->kernel->cleanup(hs->userdata);
	if (r >= 0) {
		hs->stats.cleanup_cycles++;
		done = true;
	} else if (r != -EOPNOTSUPP) {
		hs->stats.cleanup_failures++;
		log_warning_errno(r, "Scratch memcg cycle (for %s and the handovers with it) failed", h->path);
	}
	now = hs_now(hs);
	while ((h = hs->cleanup_head)) {
		if (done) {
			h->cleanup_done = true;
			h->t_cleanup = now;
		}
		run(hs, h, WBG_EVENT_CLEANED, NULL); /* off the batch, onto the next */
	}
}

/* The verify batch's handovers that are due: one read of wb_stats says for
 * all of them whether a dying wb of theirs still has dirty IO. */
static void run_verify(struct wbg_lifecycle *hs, uint64_t now)
{
	_cleanup_free_ uint64_t *dirty = NULL;
	size_t n = 0;
	int r = hs->ops->kernel->dirty_cgroups(hs->userdata, &dirty, &n);

	if (r == -ENOMEM)
		log_oom();
	while (hs->verify_head && hs->verify_head->verify_due <= now) {
		struct wbg_handover *h = hs->verify_head;
		bool is_dirty = r >= 0 && wbstats_set_has(dirty, n, h->cgroup_id);

		run(hs, h, hs_watch_verified(hs, h, r >= 0, is_dirty, now), NULL);
	}
}

static void timed_out(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	log_warning("Flush for %s did not finish in %.1f s", h->path, (double)hs->params.timeout_usec / 1e6);
	/* a worker still inside it goes on waiting for the kernel, and
	 * another thread takes its place */
	hs->ops->flusher->timed_out(hs->userdata);
	h->outcome = WBG_OUTCOME_TIMEOUT;
	h->reason = "flush timeout";
	h->n_pending = 0;
	run(hs, h, flush_over(hs, h), NULL);
}

/* Drains, max ages and evidence due in the watch table: the events they
 * are. */
static void watch_tick(struct wbg_lifecycle *hs, uint64_t now)
{
	_cleanup_free_ uint64_t *dirty = NULL;
	size_t n = 0;
	bool known;

	hs->watch_due = 0;
	if (hs->n_watched == 0)
		return;
	known = hs->ops->kernel->dirty_cgroups(hs->userdata, &dirty, &n) >= 0;
	/* backwards: a step that ends one moves the last entry, already
	 * looked at, into its place */
	for (size_t i = hs->n_watched; i-- > 0;)
		if (i < hs->n_watched)
			run(hs, hs->watched[i], hs_watch_due(hs, hs->watched[i], known, dirty, n, now), NULL);
	if (hs->n_watched)
		hs_watch_at(hs, now + HS_WATCH_TICK_USEC);
}

void lifecycle_tick(struct wbg_lifecycle *hs)
{
	uint64_t now = hs_now(hs);
	struct wbg_handover *h;

	/* one at a time: a timeout's consequences may change the list */
	do {
		for (h = hs->in_flight; h && h->t_timeout > now; h = h->in_flight_next)
			;
		if (h)
			timed_out(hs, h);
	} while (h);
	hs_waiters_expire(hs, now);
	if (hs->cleanup_due && hs->cleanup_due <= now)
		run_cleanup(hs);
	if (hs->verify_head && hs->verify_head->verify_due <= now)
		run_verify(hs, now);
	if (hs_stall_retry_due(hs) && hs_stall_retry_due(hs) <= now)
		hs_stall_retry(hs, now);
	if (hs->watch_due && hs->watch_due <= now)
		watch_tick(hs, now);
	hs_reschedule(hs);
}

void lifecycle_job_done(struct wbg_lifecycle *hs, const struct flush_job *j)
{
	if (j->result < 0)
		log_warning_errno(j->result, "Flush of %s (%s) failed", j->mount[0] ? j->mount : "block device", j->fstype);
	for (size_t i = 0; i < j->n_waiters; i++) {
		struct wbg_handover *h = hs_find(hs, handover_waiter_id(j->waiters[i]));

		/* timed out meanwhile: an earlier round's, not this one's */
		if (!h || h->n_pending == 0 || !handover_waiter_current(h, j->waiters[i])) {
			if (h)
				hs->stats.late_jobs++;
			continue;
		}
		handover_job_done(h, j);
		if (h->n_pending == 0)
			run(hs, h, flush_over(hs, h), NULL);
	}
	hs_reschedule(hs);
}

uint64_t lifecycle_event(struct wbg_lifecycle *hs, struct wbg_cgroup *c, enum wbg_trigger trigger)
{
	struct wbg_handover *h = c->handover;
	struct wbg_plan plan = { 0 };
	enum wbg_event ev;
	uint64_t id = 0;

	if (h) {
		/* an EMPTIED replan flushes the same targets again: counted
		 * once (h lives on: a flush runs or its removal is to come) */
		unsigned t = h->n_targets, fs = h->n_fs, in = h->n_inode_targets, bd = h->n_bdev;

		ev = hs_event_move_on(hs, c, h, trigger, &plan);
		run(hs, h, ev, &plan);
		if (ev == WBG_EVENT_EMPTIED)
			h->n_targets = t, h->n_fs = fs, h->n_inode_targets = in, h->n_bdev = bd;
	} else {
		ev = hs_event_start(hs, c, trigger, &h, &plan);
		if (h) {
			id = h->id;
			run(hs, h, ev, &plan);
		}
		/* a removal already seen (the rmdir came first): watched at once */
		if (ev == WBG_EVENT_DIRTY_WATCH && (h = hs_find(hs, id)) && h->phase == WBG_PHASE_DEFERRED &&
		    h->t_removed)
			run(hs, h, WBG_EVENT_REMOVED, NULL);
	}
	plan_free(&plan);
	hs_reschedule(hs);
	return id;
}

void lifecycle_repopulated(struct wbg_lifecycle *hs, struct wbg_cgroup *c)
{
	struct wbg_handover *h = c->handover;
	enum wbg_event ev = hs_event_repopulated(c, h);

	if (ev == HS_NO_EVENT)
		return;
	run(hs, h, ev, NULL);
	hs_reschedule(hs);
}

static int evidence(struct wbg_lifecycle *hs, struct wbg_handover *h, const struct wbg_inode_key *inode)
{
	enum wbg_event ev = hs_watch_evidence(hs, h, inode, hs_now(hs));

	run(hs, h, ev, NULL);
	return ev == WBG_EVENT_EVIDENCE_SOON;
}

int lifecycle_stall(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, dev_t bdi_dev, bool in_scope)
{
	struct wbg_plan plan = { 0 };
	struct wbg_handover *h;
	enum wbg_event ev;
	uint64_t id;
	int r = hs_stall_admit(hs, cgroup_id, path, bdi_dev, in_scope, hs_now(hs));

	if (r <= 0) {
		hs_reschedule(hs); /* a capped one's retry */
		return r;
	}
	h = hs_start(hs, cgroup_id, path && *path ? path : "", WBG_TRIGGER_STALL);
	if (!h)
		return -ENOMEM;
	id = h->id;
	ev = hs_stall_plan(hs, h, bdi_dev, &plan);
	run(hs, h, ev, &plan);
	plan_free(&plan);
	if (ev == WBG_EVENT_DIRTY_WATCH) {
		run(hs, h, WBG_EVENT_REMOVED, NULL);
		/* its first evidence is the stall itself, flushed as the
		 * evidence cap allows (or by the tick, when it refills) */
		h = hs_find(hs, id);
		if (h && h->phase == WBG_PHASE_WATCHED)
			(void)evidence(hs, h, NULL);
	}
	hs_reschedule(hs);
	return 1;
}

int lifecycle_evidence(struct wbg_lifecycle *hs, uint64_t cgroup_id, const struct wbg_inode_key *inode,
		       const char **ret_path)
{
	struct wbg_handover *h = hs_watch_find(hs, cgroup_id);
	int soon;

	if (!h) {
		hs->watch_stats.evidence_ignored++;
		return -ENOENT;
	}
	*ret_path = h->path;
	soon = evidence(hs, h, inode);
	hs_reschedule(hs);
	return soon;
}

void lifecycle_released(struct wbg_lifecycle *hs, uint64_t cgroup_id)
{
	struct wbg_handover *h = hs_watch_find(hs, cgroup_id);

	if (!h)
		return;
	run(hs, h, hs_watch_released(h), NULL);
	hs_reschedule(hs);
}

int lifecycle_recover(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, const dev_t *devs,
		      const bool *bdev, size_t n, uint64_t *ret_id)
{
	struct wbg_handover *h = hs_start(hs, cgroup_id, path, WBG_TRIGGER_RECOVERED);
	struct wbg_plan plan = { 0 };
	uint64_t id;

	if (!h)
		return -ENOMEM;
	id = h->id;
	run(hs, h, hs_event_recovered(hs, h, devs, bdev, n, &plan), &plan);
	plan_free(&plan);
	hs_reschedule(hs);
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

void lifecycle_stop(struct wbg_lifecycle *hs)
{
	size_t n = 0;
	struct wbg_handover **v, **p;

	hs_waiters_stop(hs);
	/* Every handover still open is recorded as it stands, in one pass
	 * (a step may end and free it: collected first). */
	twalk_r(hs->active, count_active, &n);
	v = calloc(n + 1, sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	p = v;
	if (v) {
		twalk_r(hs->active, collect_active, &p);
		for (struct wbg_handover **q = v; q < p; q++)
			run(hs, *q, hs_event_stop(*q), NULL);
		free(v);
	} else
		log_oom();
	hs->cleanup_head = hs->cleanup_tail = hs->verify_head = hs->verify_tail = NULL;
	hs->cleanup_due = hs->watch_due = 0;
	free(hs->watched);
	hs->watched = NULL;
	hs->n_watched = hs->watch_cap = 0;
	tdestroy(hs->active_cgroups, free); /* (empty: every handover ended above) */
	hs->active_cgroups = NULL;
	hs_recent_clear(hs);
}
