/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle as the API and the daemon's start and stop see
 * it: callers waiting for a flush (answered once, when it ends or at their
 * timeout), the ring of recent records, a restart's recovered handovers,
 * and stopping. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "lifecycle-internal.h"
#include "log.h"
#include "macro.h"

/* A FlushCgroup call waiting for its handover's flush. */
struct wbg_waiter {
	struct wbg_waiter *next;
	void *call;
	uint64_t handover_id;
	uint64_t tenant; /* its handover's, for its share of the table */
	bool pooled;     /* its slot came from the pool of shares (share.h) */
	uint64_t due;    /* its caller's timeout */
};

static void waiter_free(struct wbg_lifecycle *hs, struct wbg_waiter *w)
{
	struct wbg_waiter **p;

	for (p = &hs->waiters; *p && *p != w; p = &(*p)->next)
		;
	if (*p) {
		*p = w->next;
		hs->n_waiters--;
		share_give(&hs->waiter_share, w->pooled);
	}
	hs->ops->audience->call_unref(hs->userdata, w->call);
	free(w);
}

/* The handover's flush is over (or it ended without one): answer whoever
 * waits for it. */
void hs_reply_waiters(struct wbg_lifecycle *hs, const struct wbg_handover *h, const char *outcome)
{
	struct wbg_waiter *w = hs->waiters, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->handover_id != h->id)
			continue;
		hs->ops->audience->reply(hs->userdata, w->call, h->id, outcome, h->reason);
		waiter_free(hs, w);
	}
}

uint64_t hs_waiters_next_due(const struct wbg_lifecycle *hs)
{
	uint64_t next = 0;

	for (const struct wbg_waiter *w = hs->waiters; w; w = w->next)
		if (!next || w->due < next)
			next = w->due;
	return next;
}

void hs_waiters_expire(struct wbg_lifecycle *hs, uint64_t now)
{
	struct wbg_waiter *w = hs->waiters, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->due > now)
			continue;
		hs->ops->audience->reply(hs->userdata, w->call, w->handover_id, "pending",
			       "still flushing when the caller's timeout came");
		waiter_free(hs, w);
	}
}

unsigned lifecycle_drop_waiters(struct wbg_lifecycle *hs, bool (*match)(void *call, const void *data),
				const void *data)
{
	struct wbg_waiter *w = hs->waiters, *next;
	unsigned n = 0;

	for (; w; w = next) {
		next = w->next;
		if (!match(w->call, data))
			continue;
		waiter_free(hs, w);
		n++;
	}
	return n;
}

void hs_remember(struct wbg_lifecycle *hs, const struct wbg_handover *h, const char *json)
{
	struct wbg_recent *r = &hs->recent[hs->n_recent++ % WBG_RECENT_MAX];

	free(r->path);
	free(r->json);
	*r = (struct wbg_recent){ .id = h->id, .path = strdup(h->path), .json = strdup(json),
				  .outcome = wbg_outcome_to_string(h->outcome), .reason = h->reason };
}

uint64_t lifecycle_recent_first(const struct wbg_lifecycle *hs, size_t limit)
{
	uint64_t n = hs->n_recent < WBG_RECENT_MAX ? hs->n_recent : WBG_RECENT_MAX;

	if (limit && limit < n)
		n = limit;
	return hs->n_recent - n;
}

const struct wbg_recent *lifecycle_recent_at(const struct wbg_lifecycle *hs, uint64_t i)
{
	return i < hs->n_recent && i + WBG_RECENT_MAX >= hs->n_recent ? &hs->recent[i % WBG_RECENT_MAX] : NULL;
}

/* By id, or else by path; newest first. */
static const struct wbg_recent *recent_by(const struct wbg_lifecycle *hs, uint64_t id, const char *path)
{
	for (uint64_t i = 0; i < WBG_RECENT_MAX && i < hs->n_recent; i++) {
		const struct wbg_recent *r = &hs->recent[(hs->n_recent - 1 - i) % WBG_RECENT_MAX];

		if (!r->path)
			continue;
		if (id ? r->id == id : strcmp(r->path, path) == 0)
			return r;
	}
	return NULL;
}

uint64_t lifecycle_total(const struct wbg_lifecycle *hs)
{
	uint64_t total = 0;

	for (int t = 0; t < _WBG_TRIGGER_MAX; t++)
		for (int o = 0; o < _WBG_OUTCOME_MAX; o++)
			total += hs->stats.by[t][o];
	return total;
}

struct path_lookup {
	const char *path;
	struct wbg_handover *found;
};

static void match_active(const void *nodep, VISIT which, void *closure)
{
	struct wbg_handover *h = *(struct wbg_handover *const *)nodep;
	struct path_lookup *l = closure;

	if ((which == postorder || which == leaf) && strcmp(h->path, l->path) == 0 &&
	    (!l->found || h->id > l->found->id))
		l->found = h;
}

static int answer(struct wbg_lifecycle *hs, void *call, const struct wbg_recent *r, uint64_t id)
{
	hs->ops->audience->reply(hs->userdata, call, r ? r->id : id, r ? r->outcome : "unknown", r ? r->reason : NULL);
	return 1;
}

int lifecycle_flush_request(struct wbg_lifecycle *hs, struct wbg_cgroup *c, const char *path, uint64_t timeout_usec,
			    void *call)
{
	struct path_lookup l = { .path = path };
	struct wbg_handover *h;
	struct wbg_waiter *w;
	bool pooled;

	if (c && !c->removed && c->in_scope) {
		if (!c->handover) {
			uint64_t id = lifecycle_event(hs, c, WBG_TRIGGER_API);

			if (!c->handover) /* over already (clean, flush disabled...) */
				return answer(hs, call, id ? recent_by(hs, id, "") : NULL, id);
		}
		h = c->handover;
	} else {
		twalk_r(hs->active, match_active, &l);
		h = l.found;
	}
	if (!h) {
		const struct wbg_recent *done = recent_by(hs, 0, path);

		return done ? answer(hs, call, done, 0) : -ENOENT;
	}
	switch (h->phase) {
	case WBG_PHASE_FLUSHING:
		break; /* waited for, below */
	case WBG_PHASE_DEFERRED:
	case WBG_PHASE_WATCHED:
		/* on-evidence: nothing is written until a live cgroup dirties
		 * its files, which may be never: a watch is an answer */
		hs->ops->audience->reply(hs->userdata, call, h->id, "watched",
			       "on-evidence: its dying wb is watched, and written when a live cgroup dirties its files");
		return 1;
	default: /* its flush is over (or there was none), or being checked */
		hs->ops->audience->reply(hs->userdata, call, h->id,
			       h->outcome != WBG_OUTCOME_PENDING ? wbg_outcome_to_string(h->outcome)
			       : !h->was_watched		 ? "pending"
			       : h->flushes			 ? "flushed"
								 : "watched",
			       h->reason);
		return 1;
	}
	if (timeout_usec == 0) {
		hs->ops->audience->reply(hs->userdata, call, h->id, "pending", "not waited for");
		return 1;
	}
	{
		/* a tenant's exits share the table too: one tenant's many
		 * containers stopping at once leave the others' waits theirs */
		unsigned of_tenant = 0;

		for (struct wbg_waiter *o = hs->waiters; o; o = o->next)
			of_tenant += o->tenant == h->tenant;
		share_set(&hs->waiter_share, WBG_FLUSH_WAITERS_MAX, WBG_FLUSH_WAITERS_PER_TENANT);
		if (share_take(&hs->waiter_share, true, of_tenant, &pooled) != WBG_SHARE_TAKEN)
			return -EBUSY;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		share_give(&hs->waiter_share, pooled);
		return -ENOMEM;
	}
	*w = (struct wbg_waiter){ .call = hs->ops->audience->call_ref(hs->userdata, call), .handover_id = h->id,
				  .tenant = h->tenant, .pooled = pooled,
				  .due = hs_now(hs) + timeout_usec, .next = hs->waiters };
	hs->waiters = w;
	hs->n_waiters++;
	hs_reschedule(hs);
	return 1;
}

int lifecycle_recover(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, const dev_t *devs,
		      const bool *bdev, size_t n, uint64_t *ret_id)
{
	struct wbg_handover *h = hs_start(hs, cgroup_id, path, WBG_TRIGGER_RECOVERED);
	struct wbg_plan plan = { 0 };
	uint64_t id;
	int r;

	if (!h)
		return -ENOMEM;
	h->t_removed = h->t_trigger;
	id = h->id;
	r = hs->ops->flusher->plan_recorded(hs->userdata, devs, bdev, n, &plan);
	if (r < 0 || plan.n == 0) {
		h->outcome = r < 0 ? WBG_OUTCOME_FAILED : WBG_OUTCOME_NO_TARGETS;
		h->reason = r < 0 ? "planning failed" : "its filesystems are gone";
	}
	hs_step(hs, h, r >= 0 && plan.n > 0 ? WBG_EVENT_DIRTY : WBG_EVENT_NOTHING, &plan);
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

	while (hs->waiters) {
		hs->ops->audience->reply(hs->userdata, hs->waiters->call, hs->waiters->handover_id, "pending", "daemon stopping");
		waiter_free(hs, hs->waiters);
	}
	hs->stopping = true;
	/* Every handover still open is recorded as it stands, in one pass:
	 * a flush, a deferral or a watch interrupted keeps its pending
	 * record, and the next start flushes what it names. */
	twalk_r(hs->active, count_active, &n);
	v = calloc(n + 1, sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	p = v;
	if (v) {
		twalk_r(hs->active, collect_active, &p);
		for (struct wbg_handover **q = v; q < p; q++) {
			struct wbg_handover *h = *q;

			if (h->outcome == WBG_OUTCOME_PENDING || h->phase == WBG_PHASE_FLUSHING) {
				if (h->phase == WBG_PHASE_FLUSHING) {
					h->outcome = WBG_OUTCOME_INTERRUPTED;
					h->reason = "daemon stopped during the flush";
				} else if (h->phase == WBG_PHASE_DEFERRED) {
					/* on-evidence, dirty and emptied, not yet
					 * removed: nothing was flushed */
					h->outcome = WBG_OUTCOME_INTERRUPTED;
					h->reason = "daemon stopped before its removal";
				}
			}
			hs_step(hs, h, WBG_EVENT_STOP, NULL);
		}
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
	for (size_t i = 0; i < WBG_RECENT_MAX; i++) {
		free(hs->recent[i].path);
		free(hs->recent[i].json);
		hs->recent[i] = (struct wbg_recent){ 0 };
	}
}

const struct wbg_handover *lifecycle_find(const struct wbg_lifecycle *hs, uint64_t id)
{
	return hs_find(hs, id);
}
