/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the lifecycle keeps for the API: callers waiting for a flush
 * (answered once, when it ends or at their timeout; each tenant a share of
 * the table), and the ring of recent records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle-internal.h"
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

/* The flush is over: for waiters, what it came to. A watched handover's
 * outcome waits for its end. */
void hs_answer(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	enum wbg_outcome o = h->outcome;

	if (o == WBG_OUTCOME_PENDING)
		o = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
	if (!h->was_watched)
		h->outcome = o;
	hs_reply_waiters(hs, h, wbg_outcome_to_string(o));
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

const struct wbg_recent *hs_recent_by(const struct wbg_lifecycle *hs, uint64_t id, const char *path)
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

int hs_waiter_add(struct wbg_lifecycle *hs, const struct wbg_handover *h, void *call, uint64_t timeout_usec)
{
	/* a tenant's exits share the table too: one tenant's many containers
	 * stopping at once leave the others' waits theirs */
	unsigned of_tenant = 0;
	struct wbg_waiter *w;
	bool pooled;

	for (struct wbg_waiter *o = hs->waiters; o; o = o->next)
		of_tenant += o->tenant == h->tenant;
	share_set(&hs->waiter_share, WBG_FLUSH_WAITERS_MAX, WBG_FLUSH_WAITERS_PER_TENANT);
	if (share_take(&hs->waiter_share, true, of_tenant, &pooled) != WBG_SHARE_TAKEN)
		return -EBUSY;
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
	return 0;
}

void hs_waiters_stop(struct wbg_lifecycle *hs)
{
	while (hs->waiters) {
		hs->ops->audience->reply(hs->userdata, hs->waiters->call, hs->waiters->handover_id, "pending", "daemon stopping");
		waiter_free(hs, hs->waiters);
	}
}

void hs_recent_clear(struct wbg_lifecycle *hs)
{
	for (size_t i = 0; i < WBG_RECENT_MAX; i++) {
		free(hs->recent[i].path);
		free(hs->recent[i].json);
		hs->recent[i] = (struct wbg_recent){ 0 };
	}
}
