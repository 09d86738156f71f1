/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's core: start, plan, flush, timeout, the cleanup
 * and verify batches, and the end. The API's side (waiters, the recent
 * ring, recovery, stopping) is in handovers-api.c, the on-evidence watch's
 * in handovers-evidence.c. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <json-c/json.h>

#include "handovers.h"
#include "handovers-internal.h"
#include "log.h"
#include "macro.h"
#include "wbstats.h"

uint64_t hs_now(const struct wbg_handovers *hs)
{
	return hs->ops->now(hs->userdata);
}

struct wbg_handover *hs_find(const struct wbg_handovers *hs, uint64_t id)
{
	struct wbg_handover key = { .id = id }, **f = tfind(&key, &hs->active, cmp_leading_u64);

	return f ? *f : NULL;
}

void handovers_init(struct wbg_handovers *hs, const struct wbg_handovers_params *p, struct wbg_registry *reg,
		    const struct wbg_containers *containers, const struct wbg_handovers_ops *ops, void *userdata)
{
	static const double reaction[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5 };
	static const double duration[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60 };

	*hs = (struct wbg_handovers){ .params = *p, .reg = reg, .containers = containers, .ops = ops,
				      .userdata = userdata, .mitigating = true };
	hist_init(&hs->reaction, reaction, ELEMENTSOF(reaction));
	hist_init(&hs->flush_duration, duration, ELEMENTSOF(duration));
	hs_dying_init(hs);
}

void handovers_open_ids(struct wbg_handovers *hs, const char *dir, uint64_t floor)
{
	ids_open(&hs->ids, dir, floor);
}

void handovers_set_params(struct wbg_handovers *hs, const struct wbg_handovers_params *p)
{
	hs->params = *p;
	hs->dying.params.max = p->dying.max;
	hs->dying.params.max_age_usec = p->dying.max_age_usec;
	hs->dying.params.reflush_usec = p->dying.reflush_usec;
}

void handovers_set_mitigating(struct wbg_handovers *hs, bool on)
{
	hs->mitigating = on;
}

/* The earliest of every deadline held, to the one timer. */
void hs_reschedule(struct wbg_handovers *hs)
{
	uint64_t next = hs_waiters_next_due(hs);

#define EARLIER(t) (next = (t) && (!next || (t) < next) ? (t) : next)
	for (const struct wbg_handover *h = hs->in_flight; h; h = h->in_flight_next)
		EARLIER(h->t_timeout);
	EARLIER(hs->cleanup_due);
	if (hs->verify_head)
		EARLIER(hs->verify_head->verify_due);
	EARLIER(hs->dying_due);
#undef EARLIER
	if (next)
		hs->ops->schedule(hs->userdata, next);
}

static void in_flight_remove(struct wbg_handovers *hs, struct wbg_handover *h)
{
	struct wbg_handover **p;

	if (!h->in_flight)
		return;
	for (p = &hs->in_flight; *p && *p != h; p = &(*p)->in_flight_next)
		;
	if (*p)
		*p = h->in_flight_next;
	h->in_flight = false;
	h->in_flight_next = NULL;
}

/* The end of a handover: counted, recorded, answered, freed. */
void hs_retire(struct wbg_handovers *hs, struct wbg_handover *h)
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
	in_flight_remove(hs, h);
	if (tdelete(h, &hs->active, cmp_leading_u64))
		hs->n_active--;
	if (h->pending_saved)
		hs->ops->pending_drop(hs->userdata, h->id);
	hs->stats.by[h->trigger][h->outcome]++;
	containers_names(hs->containers, h->path, &names);
	o = handover_to_json(h, &names);
	json = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
	if (!json)
		log_oom();
	hs->ops->ended(hs->userdata, h, json ? json : "{}");
	hs_reply_waiters(hs, h);
	hs_remember(hs, h, json ? json : "{}");
	json_object_put(o);
	handover_free(h);
}

/* A new handover, in the active set (NULL: out of memory, logged). */
struct wbg_handover *hs_start(struct wbg_handovers *hs, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger)
{
	struct wbg_handover *h = handover_new(ids_next(&hs->ids), cgroup_id, path, trigger, hs_now(hs));

	if (!h || !tsearch(h, &hs->active, cmp_leading_u64)) {
		handover_free(h);
		log_oom();
		return NULL;
	}
	hs->n_active++;
	hs->started_ids[hs->started_next++ % ELEMENTSOF(hs->started_ids)] = cgroup_id;
	return h;
}

bool handovers_recently_started(const struct wbg_handovers *hs, uint64_t cgroup_id)
{
	for (size_t i = 0; i < ELEMENTSOF(hs->started_ids); i++)
		if (hs->started_ids[i] == cgroup_id)
			return true;
	return false;
}

/* After the flush, with the cgroup gone: the kernel's offline-wb cleanup
 * re-run by the next batch's scratch cycle, then the dying-wb check. */
void hs_cleanup_and_verify(struct wbg_handovers *hs, struct wbg_handover *h)
{
	LIST_APPEND(&hs->cleanup_head, &hs->cleanup_tail, h, queue_next);
	if (!hs->cleanup_due)
		hs->cleanup_due = hs_now(hs) + WBG_CLEANUP_BATCH_USEC;
}

/* One scratch memcg cycle for every handover queued since the last: its
 * removal makes the kernel re-run its offline-wb cleanup, which covers
 * every dying wb, not only the one it was run for. */
static void run_cleanup(struct wbg_handovers *hs)
{
	struct wbg_handover *h = hs->cleanup_head, *next;
	bool done = false;
	uint64_t now;
	int r;

	hs->cleanup_head = hs->cleanup_tail = NULL;
	hs->cleanup_due = 0;
	if (h) {
		r = hs->ops->cleanup(hs->userdata);
		if (r >= 0) {
			hs->stats.cleanup_cycles++;
			done = true;
		} else if (r != -EOPNOTSUPP) {
			hs->stats.cleanup_failures++;
			log_warning_errno(r, "Scratch memcg cycle (for %s and the handovers with it) failed", h->path);
		}
	}
	now = hs_now(hs);
	for (; h; h = next) {
		next = h->queue_next;
		h->queue_next = NULL;
		if (done) {
			h->cleanup_done = true;
			h->t_cleanup = now;
		}
		h->verify_due = now + WBG_VERIFY_DELAY_USEC;
		LIST_APPEND(&hs->verify_head, &hs->verify_tail, h, queue_next);
	}
}

/* The verify batch's handovers that are due: one read of wb_stats says for
 * all of them whether a dying wb of theirs still has dirty IO. */
static void run_verify(struct wbg_handovers *hs, uint64_t now)
{
	_cleanup_free_ uint64_t *dirty = NULL;
	size_t n = 0;
	int r = hs->ops->dirty_cgroups(hs->userdata, &dirty, &n);

	if (r == -ENOMEM)
		log_oom();
	while (hs->verify_head && hs->verify_head->verify_due <= now) {
		struct wbg_handover *h = hs->verify_head;

		hs->verify_head = h->queue_next;
		if (!hs->verify_head)
			hs->verify_tail = NULL;
		h->queue_next = NULL;
		if (r >= 0) {
			h->verify = !wbstats_set_has(dirty, n, h->cgroup_id);
			h->t_verified = now;
			if (!h->verify) {
				hs->stats.verify_dirty++;
				log_notice("A dying wb of %s still has dirty IO after the handover", h->path);
			}
		}
		hs_retire(hs, h);
	}
}

/* All targets done (or given up on). */
static void flush_finished(struct wbg_handovers *hs, struct wbg_handover *h)
{
	in_flight_remove(hs, h);
	h->t_flushed = hs_now(hs);
	if (hs_dying_flushed(hs, h))
		return; /* on-evidence: the watch cleans up and checks */
	if (h->outcome == WBG_OUTCOME_PENDING)
		h->outcome = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
	hs_reply_waiters(hs, h);
	if (h->t_removed)
		hs_cleanup_and_verify(hs, h);
	else if (h->trigger == WBG_TRIGGER_API)
		hs_retire(hs, h); /* asked for while in use: its going-away is another handover */
	/* else: the cgroup still exists; its removal continues the handover. */
}

static void timed_out(struct wbg_handovers *hs, struct wbg_handover *h)
{
	log_warning("Flush for %s did not finish in %.1f s", h->path, (double)hs->params.timeout_usec / 1e6);
	/* a worker still inside it goes on waiting for the kernel, and
	 * another thread takes its place */
	hs->ops->timed_out(hs->userdata);
	h->outcome = WBG_OUTCOME_TIMEOUT;
	h->reason = "flush timeout";
	h->n_pending = 0;
	flush_finished(hs, h);
}

/* Every handover with a flush running has its timeout. */
static void arm_timeout(struct wbg_handovers *hs, struct wbg_handover *h)
{
	/* on-evidence flushes one handover more than once */
	h->t_timeout = hs_now(hs) + hs->params.timeout_usec;
	if (!h->in_flight) {
		h->in_flight = true;
		h->in_flight_next = hs->in_flight;
		hs->in_flight = h;
	}
}

void handovers_tick(struct wbg_handovers *hs)
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
	if (hs->dying_due && hs->dying_due <= now)
		hs->dying_due = dying_tick(&hs->dying, now);
	hs_reschedule(hs);
}

void handovers_job_done(struct wbg_handovers *hs, const struct flush_job *j)
{
	if (j->result < 0)
		log_warning_errno(j->result, "Flush of %s (%s) failed", j->mount[0] ? j->mount : "block device", j->fstype);
	for (size_t i = 0; i < j->n_waiters; i++) {
		struct wbg_handover *h = hs_find(hs, j->waiters[i]);

		if (!h || h->n_pending == 0)
			continue; /* timed out meanwhile */
		handover_job_done(h, j);
		if (h->n_pending == 0)
			flush_finished(hs, h);
	}
	hs_reschedule(hs);
}

/* The plan's targets to the pool, and the handover's record of them. */
int hs_submit(struct wbg_handovers *hs, struct wbg_handover *h, struct wbg_plan *plan)
{
	int r;

	h->plan_source = plan->source;
	h->n_excluded = plan->n_excluded;
	for (size_t i = 0; i < plan->n; i++) {
		struct wbg_plan_target *t = &plan->t[i];

		log_debug("handover %" PRIu64 ": target %u:%u %s %s, %s%zu inodes, %u passes", h->id, major(t->dev),
			  minor(t->dev), t->fstype, t->mount, t->use_inodes ? "" : "syncfs, ", t->n_inodes, t->passes);
		r = hs->ops->submit(hs->userdata, t, h->flush_inodes ? FLUSH_MODE_EVIDENCE : FLUSH_MODE_HANDOVER, h->id);
		if (r == -EBUSY) {
			/* that target's queue is full (its flush hangs): failed */
			log_warning("handover %" PRIu64 ": %s is not taking flushes (too many waiting)", h->id, t->mount);
			h->n_failed++;
			continue;
		}
		if (r < 0)
			return log_oom();
		if (h->n_targets < ELEMENTSOF(h->target)) {
			h->target[h->n_targets].major = major(t->dev);
			h->target[h->n_targets].minor = minor(t->dev);
			snprintf(h->target[h->n_targets].fstype, sizeof(h->target[0].fstype), "%s", t->fstype);
			h->target[h->n_targets].how = t->kind == FLUSH_BDEV ? "bdev" : t->use_inodes ? "inodes" : "syncfs";
		}
		h->n_targets++;
		h->n_pending++;
		if (t->kind == FLUSH_BDEV)
			h->n_bdev++;
		else if (t->use_inodes)
			h->n_inode_targets++;
		else
			h->n_fs++;
	}
	/* on disk while its flush runs, so that a restart redoes it; a
	 * failure costs only that */
	if (!h->pending_saved && h->n_pending && hs->ops->pending_save(hs->userdata, h, plan) >= 0)
		h->pending_saved = true;
	if (h->n_pending)
		arm_timeout(hs, h);
	return 0;
}

/* Plans and starts a handover's flush now: what BPF says the cgroup
 * dirtied (its inodes only, for evidence), else every filesystem. */
int hs_flush(struct wbg_handovers *hs, struct wbg_handover *h, bool inodes)
{
	struct wbg_plan plan = { 0 };
	int r = hs->ops->plan(hs->userdata, h->cgroup_id, NULL, inodes, &plan);

	h->flush_inodes = inodes;
	if (r >= 0 && plan.n == 0) {
		plan_free(&plan);
		r = hs->ops->plan_mounts(hs->userdata, &plan);
		plan.source = "mounts";
	}
	if (r >= 0 && plan.n > 0)
		r = hs_submit(hs, h, &plan);
	plan_free(&plan);
	if (r < 0) {
		h->n_failed++;
		return r;
	}
	return 0;
}
