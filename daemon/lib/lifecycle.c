/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's core: the step carried out (the one place a
 * phase changes), the flush and its timeout, the cleanup and verify
 * batches every mode shares, and the end. What starts a handover is in
 * lifecycle-event.c, the API's side in lifecycle-api.c, the watch table in
 * lifecycle-watch.c. */
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

uint64_t hs_now(const struct wbg_lifecycle *hs)
{
	return hs->ops->clock->now(hs->userdata);
}

struct active_cgroup {
	uint64_t cgroup_id; /* first: cmp_leading_u64 */
	unsigned n;
};

/* The per-cgroup count of handovers in progress; an entry goes with its
 * last one. (No memory for a new entry: that cgroup's stall reports are
 * then taken as uncovered, and the one-per-cgroup bound in BPF still
 * holds.) */
static void active_cgroup_count(struct wbg_lifecycle *hs, uint64_t cgroup_id, int delta)
{
	struct active_cgroup key = { .cgroup_id = cgroup_id }, **f = tfind(&key, &hs->active_cgroups, cmp_leading_u64), *e;

	if (!f && delta > 0) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->cgroup_id = cgroup_id;
		f = tsearch(e, &hs->active_cgroups, cmp_leading_u64);
		if (!f || *f != e) {
			free(e);
			return;
		}
	}
	if (!f)
		return;
	e = *f;
	if (delta > 0)
		e->n++;
	else if (e->n && --e->n == 0) {
		tdelete(e, &hs->active_cgroups, cmp_leading_u64);
		free(e);
	}
}

bool lifecycle_cgroup_active(const struct wbg_lifecycle *hs, uint64_t cgroup_id)
{
	struct active_cgroup key = { .cgroup_id = cgroup_id };

	return tfind(&key, &hs->active_cgroups, cmp_leading_u64) != NULL;
}

struct wbg_handover *hs_find(const struct wbg_lifecycle *hs, uint64_t id)
{
	struct wbg_handover key = { .id = id }, **f = tfind(&key, &hs->active, cmp_leading_u64);

	return f ? *f : NULL;
}

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
	if (tdelete(h, &hs->active, cmp_leading_u64)) {
		hs->n_active--;
		active_cgroup_count(hs, h->cgroup_id, -1);
		hs->ended_ids[hs->ended_next++ % ELEMENTSOF(hs->ended_ids)] = h->cgroup_id;
	}
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

/* A new handover, in the active set (NULL: out of memory, logged). */
struct wbg_handover *hs_start(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger)
{
	struct wbg_handover *h = handover_new(ids_next(&hs->ids), cgroup_id, path, trigger, hs_now(hs));

	if (!h || !tsearch(h, &hs->active, cmp_leading_u64)) {
		handover_free(h);
		log_oom();
		return NULL;
	}
	hs->n_active++;
	active_cgroup_count(hs, cgroup_id, +1);
	return h;
}

bool lifecycle_recently_started(const struct wbg_lifecycle *hs, uint64_t cgroup_id)
{
	if (lifecycle_cgroup_active(hs, cgroup_id))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(hs->ended_ids); i++)
		if (hs->ended_ids[i] == cgroup_id)
			return true;
	return false;
}

/* A target into the handover's record; false if it is there already (the
 * watch's second flush of the same filesystem). */
static bool record_target(struct wbg_handover *h, const struct wbg_plan_target *t)
{
	const char *how = t->kind == FLUSH_BDEV ? "bdev" : t->use_inodes ? "inodes" : "syncfs";
	unsigned n = h->n_targets < ELEMENTSOF(h->target) ? h->n_targets : ELEMENTSOF(h->target);

	for (unsigned i = 0; i < n; i++)
		if (h->target[i].major == major(t->dev) && h->target[i].minor == minor(t->dev) &&
		    (strcmp(h->target[i].how, "bdev") == 0) == (t->kind == FLUSH_BDEV))
			return false;
	if (n < ELEMENTSOF(h->target)) {
		h->target[n].major = major(t->dev);
		h->target[n].minor = minor(t->dev);
		snprintf(h->target[n].fstype, sizeof(h->target[0].fstype), "%s", t->fstype);
		h->target[n].how = how;
	}
	h->n_targets++;
	return true;
}

/* The plan's targets to the pool, and the handover's record of them. */
static int submit(struct wbg_lifecycle *hs, struct wbg_handover *h, struct wbg_plan *plan)
{
	int r;

	h->plan_source = plan->source;
	h->n_excluded = plan->n_excluded;
	/* a new round unless this one's jobs are still pending (a plan
	 * submitted in two parts) */
	if (h->n_pending == 0)
		h->flush_round++;
	for (size_t i = 0; i < plan->n; i++) {
		struct wbg_plan_target *t = &plan->t[i];

		log_debug("handover %" PRIu64 ": target %u:%u %s %s, %s%zu inodes, %u passes", h->id, major(t->dev),
			  minor(t->dev), t->fstype, t->mount, t->use_inodes ? "" : "syncfs, ", t->n_inodes, t->passes);
		r = hs->ops->flusher->submit(hs->userdata, t, h->flush_mode, handover_waiter(h));
		if (r == -EBUSY) {
			/* that target's queue is full (its flush hangs): failed */
			log_warning("handover %" PRIu64 ": %s is not taking flushes (too many waiting)", h->id, t->mount);
			h->n_failed++;
			continue;
		}
		if (r < 0)
			return log_oom();
		h->n_pending++;
		if (!record_target(h, t))
			continue; /* an evidence flush's again: counted once */
		if (t->kind == FLUSH_BDEV)
			h->n_bdev++;
		else if (t->use_inodes)
			h->n_inode_targets++;
		else
			h->n_fs++;
	}
	return 0;
}

/* On disk while its flush runs or its removal is watched, so that a
 * restart redoes it; a failure costs only that. */
static void save_pending(struct wbg_lifecycle *hs, struct wbg_handover *h, const struct wbg_plan *plan)
{
	if (!h->pending_saved && plan->n && hs->ops->flusher->pending_save(hs->userdata, h, plan) >= 0)
		h->pending_saved = true;
}

/* Plans and submits a handover's flush now: what BPF says the cgroup
 * dirtied (its inodes only, for evidence), else every filesystem. */
static void flush(struct wbg_lifecycle *hs, struct wbg_handover *h, bool inodes)
{
	struct wbg_plan plan = { 0 };
	int r = hs->ops->flusher->plan(hs->userdata, h->cgroup_id, NULL, inodes, &plan);

	h->flush_mode = inodes ? FLUSH_MODE_EVIDENCE : FLUSH_MODE_HANDOVER;
	hs->stats.inode_records_evicted += plan.inodes_evicted;
	if (r >= 0 && plan.n == 0) {
		plan_free(&plan);
		/* a stall's handover: the stalled device's filesystem, not every one */
		r = h->stall_dev ? hs->ops->flusher->plan_recorded(hs->userdata, &h->stall_dev, &(bool){ false }, 1, &plan)
				 : hs->ops->flusher->plan_mounts(hs->userdata, &plan);
		plan.source = h->stall_dev ? "stall device" : "mounts";
	}
	/* the inode the writer is waiting on, whatever the LRU kept */
	if (r >= 0 && inodes && h->evidence_inode.ino && plan_add_inode(&plan, &h->evidence_inode) > 0)
		hs->stats.evidence_inodes_added++;
	if (r >= 0 && plan.n > 0) {
		r = submit(hs, h, &plan);
		save_pending(hs, h, &plan);
	}
	plan_free(&plan);
	if (r < 0) {
		log_error_errno(r, "Cannot flush %s", h->path);
		h->n_failed++;
	}
}

/* Every job ended (or the flush timed out): the event by where the cgroup
 * is. */
static void flush_finished(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	h->t_flushed = hs_now(hs);
	if (h->watch && (h->n_failed || h->outcome == WBG_OUTCOME_TIMEOUT))
		hs->watch_stats.flush_failures++;
	if (!h->t_removed && h->trigger != WBG_TRIGGER_API && h->n_failed && !h->n_targets) {
		struct wbg_cgroup *c = registry_find_id(hs->reg, h->cgroup_id);

		if (c)
			c->settled = false; /* its removal is another handover */
		hs_step(hs, h, WBG_EVENT_NONE_STARTED, NULL);
		return;
	}
	hs_step(hs, h,
		h->t_removed && h->exit_recipe && !h->was_watched ? WBG_EVENT_FLUSHED_GONE_WATCH
		: h->t_removed					  ? WBG_EVENT_FLUSHED_GONE
		: h->trigger == WBG_TRIGGER_API			  ? WBG_EVENT_FLUSHED_ASKED
								  : WBG_EVENT_FLUSHED,
		NULL);
}

/* The flush is over: for waiters, what it came to. A watched handover's
 * outcome waits for its end. */
static void answer(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	enum wbg_outcome o = h->outcome;

	if (o == WBG_OUTCOME_PENDING)
		o = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
	if (!h->was_watched)
		h->outcome = o;
	hs_reply_waiters(hs, h, wbg_outcome_to_string(o));
}

static void carry_out(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event, unsigned actions,
		      struct wbg_plan *plan)
{
	uint64_t now = hs_now(hs);
	unsigned pending_before = h->n_pending;

	if (actions & (WBG_ACT_FLUSH_ALL | WBG_ACT_FLUSH_INODES) && h->watch) {
		h->flushes++;
		hs->watch_stats.flushes++;
		h->t_last_flush = now;
		h->evidence_pending = h->quiet = false;
	}
	if (actions & WBG_ACT_SUBMIT && plan && submit(hs, h, plan) < 0) {
		h->outcome = WBG_OUTCOME_FAILED;
		h->reason = "out of memory";
	}
	if (actions & WBG_ACT_FLUSH_ALL)
		flush(hs, h, false);
	if (actions & WBG_ACT_FLUSH_INODES)
		flush(hs, h, true);
	if (actions & WBG_ACT_SAVE_PENDING && plan) {
		h->plan_source = plan->source;
		save_pending(hs, h, plan);
	}
	if (actions & WBG_ACT_SUBMIT && plan)
		save_pending(hs, h, plan);
	if (actions & WBG_ACT_WATCH && hs_watch_add(hs, h) < 0) {
		hs_step(hs, h, WBG_EVENT_WATCH_REFUSED, NULL);
		return;
	}
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
		answer(hs, h);
	if (actions & WBG_ACT_END && h->was_watched)
		hs_watch_outcome(hs, h, event);
	if (actions & WBG_ACT_UNWATCH)
		hs_watch_remove(hs, h, event);
	if (actions & WBG_ACT_KEEP_PENDING)
		h->pending_saved = false; /* kept: the next start redoes it */
	if (actions & WBG_ACT_END) {
		retire(hs, h);
		return;
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
		} else if (h->n_pending == 0) {
			flush_finished(hs, h); /* nothing was started after all */
			return;
		}
	}
	if (h->watch && h->evidence_pending && h->phase != WBG_PHASE_FLUSHING)
		hs_watch_at(hs, h->t_last_flush + hs->params.watch.reflush_usec);
}

void hs_step(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event, struct wbg_plan *plan)
{
	enum wbg_phase from = h->phase;
	struct wbg_step s = handover_step(from, event);

	if (from == WBG_PHASE_ENDED)
		return;
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
	carry_out(hs, h, event, s.actions, plan);
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
		hs_step(hs, h, WBG_EVENT_CLEANED, NULL); /* off the batch, onto the next */
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

		hs_step(hs, h, hs_watch_verified(hs, h, r >= 0, is_dirty, now), NULL);
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
	flush_finished(hs, h);
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
	if (hs->watch_due && hs->watch_due <= now)
		hs_watch_tick(hs, now);
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
			flush_finished(hs, h);
	}
	hs_reschedule(hs);
}
