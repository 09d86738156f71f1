/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the lifecycle keeps for the API: callers waiting for a flush
 * (answered once, when it ends or at their timeout; each tenant a share of
 * the table), and the ring of recent records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle-internal.h"
#include "wbg-base.h"

/* A FlushCgroup call waiting for its handover's flush. */
struct wbg_waiter {
	struct wbg_waiter *next;
	void *call;
	uint64_t handover_id;
	uint64_t tenant; /* its handover's, for its share of the table */
	bool pooled;     /* its slot came from the pool of shares (share.h) */
	uint64_t due;    /* its caller's timeout */
};

static void waiter_free(struct wbg_lifecycle *lc, struct wbg_waiter *w)
{
	struct wbg_waiter **p;

	for (p = &lc->waiters.head; *p && *p != w; p = &(*p)->next)
		;
	if (*p) {
		*p = w->next;
		lc->waiters.n--;
		share_give(&lc->waiters.share, w->pooled);
	}
	lc->world.audience->call_unref(lc->world.audience_data, w->call);
	free(w);
}

/* The handover's flush is over (or it ended without one): answer whoever
 * waits for it. */
void lc_reply_waiters(struct wbg_lifecycle *lc, const struct wbg_handover *h, const char *outcome)
{
	struct wbg_waiter *w = lc->waiters.head, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->handover_id != h->id)
			continue;
		lc->world.audience->reply(lc->world.audience_data, w->call, h->id, outcome, h->reason);
		waiter_free(lc, w);
	}
}

void lc_waiters_observe(struct wbg_lifecycle *lc, const struct wbg_step_out *out)
{
	struct wbg_handover *h = out->h;
	enum wbg_outcome o;

	if (!(out->actions & LC_WAITERS_OBSERVE))
		return;
	o = handover_outcome_now(h); /* before this step's conclusion */

	/* a watched one's outcome is its watch's */
	if (!h->was_watched)
		handover_conclude(h, WBG_CAUSE_FLUSHES_DONE);
	lc_reply_waiters(lc, h, wbg_outcome_to_string(o));
}

uint64_t lc_waiters_next_due(const struct wbg_lifecycle *lc)
{
	uint64_t next = 0;

	for (const struct wbg_waiter *w = lc->waiters.head; w; w = w->next)
		if (!next || w->due < next)
			next = w->due;
	return next;
}

void lc_waiters_expire(struct wbg_lifecycle *lc, uint64_t now)
{
	struct wbg_waiter *w = lc->waiters.head, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->due > now)
			continue;
		lc->world.audience->reply(lc->world.audience_data, w->call, w->handover_id, "pending",
			       "still flushing when the caller's timeout came");
		waiter_free(lc, w);
	}
}

unsigned lifecycle_drop_waiters(struct wbg_lifecycle *lc, bool (*match)(void *call, const void *data),
				const void *data)
{
	struct wbg_waiter *w = lc->waiters.head, *next;
	unsigned n = 0;

	for (; w; w = next) {
		next = w->next;
		if (!match(w->call, data))
			continue;
		waiter_free(lc, w);
		n++;
	}
	return n;
}

void lc_remember(struct wbg_lifecycle *lc, const struct wbg_handover *h, const char *json)
{
	struct wbg_recent *r = &lc->recent.v[lc->recent.n++ % WBG_RECENT_MAX];

	free(r->path);
	free(r->json);
	*r = (struct wbg_recent){ .id = h->id, .path = strdup(h->path), .json = strdup(json),
				  .outcome = wbg_outcome_to_string(h->outcome), .reason = h->reason };
}

uint64_t lifecycle_recent_first(const struct wbg_lifecycle *lc, size_t limit)
{
	uint64_t n = lc->recent.n < WBG_RECENT_MAX ? lc->recent.n : WBG_RECENT_MAX;

	if (limit && limit < n)
		n = limit;
	return lc->recent.n - n;
}

const struct wbg_recent *lifecycle_recent_at(const struct wbg_lifecycle *lc, uint64_t i)
{
	return i < lc->recent.n && i + WBG_RECENT_MAX >= lc->recent.n ? &lc->recent.v[i % WBG_RECENT_MAX] : NULL;
}

const struct wbg_recent *lc_recent_by(const struct wbg_lifecycle *lc, uint64_t id, const char *path)
{
	for (uint64_t i = 0; i < WBG_RECENT_MAX && i < lc->recent.n; i++) {
		const struct wbg_recent *r = &lc->recent.v[(lc->recent.n - 1 - i) % WBG_RECENT_MAX];

		if (!r->path)
			continue;
		if (id ? r->id == id : strcmp(r->path, path) == 0)
			return r;
	}
	return NULL;
}

int lc_waiter_add(struct wbg_lifecycle *lc, const struct wbg_handover *h, void *call, uint64_t timeout_usec)
{
	/* a tenant's exits share the table too: one tenant's many containers
	 * stopping at once leave the others' waits theirs */
	unsigned of_tenant = 0;
	struct wbg_waiter *w;
	bool pooled;

	for (struct wbg_waiter *o = lc->waiters.head; o; o = o->next)
		of_tenant += o->tenant == h->tenant;
	share_set(&lc->waiters.share, WBG_FLUSH_WAITERS_MAX, WBG_FLUSH_WAITERS_PER_TENANT);
	if (share_take(&lc->waiters.share, true, of_tenant, &pooled) != WBG_SHARE_TAKEN)
		return -EBUSY;
	w = calloc(1, sizeof(*w));
	if (!w) {
		share_give(&lc->waiters.share, pooled);
		return -ENOMEM;
	}
	*w = (struct wbg_waiter){ .call = lc->world.audience->call_ref(lc->world.audience_data, call), .handover_id = h->id,
				  .tenant = h->tenant, .pooled = pooled,
				  .due = lc_now(lc) + timeout_usec, .next = lc->waiters.head };
	lc->waiters.head = w;
	lc->waiters.n++;
	return 0;
}

void lc_waiters_stop(struct wbg_lifecycle *lc)
{
	while (lc->waiters.head) {
		lc->world.audience->reply(lc->world.audience_data, lc->waiters.head->call, lc->waiters.head->handover_id, "pending", "daemon stopping");
		waiter_free(lc, lc->waiters.head);
	}
}

void lc_recent_clear(struct wbg_lifecycle *lc)
{
	for (size_t i = 0; i < WBG_RECENT_MAX; i++) {
		free(lc->recent.v[i].path);
		free(lc->recent.v[i].json);
		lc->recent.v[i] = (struct wbg_recent){ 0 };
	}
}

void lc_waiters_metrics(FILE *f, const struct wbg_lifecycle *lc)
{
	metric_family(f, "wbguard_flush_waiters_refused_total", "counter",
		      "API callers (the hook at poststop) not waited for, by reason: the table of 256 was full, "
		      "their tenant had 64, or it was above its floor and the pool above floors was taken. Their "
		      "flush goes on; only the wait is refused.");
	share_metrics(f, &lc->waiters.share, "wbguard_flush_waiters_refused_total",
		      (const char *const[_WBG_SHARE_REFUSAL_MAX]){ [WBG_SHARE_FULL] = "full",
								   [WBG_SHARE_TENANT] = "tenant_cap",
								   [WBG_SHARE_POOL] = "tenant_pool" });
	metric_value(f, "wbguard_flush_waiters", "gauge", "API callers waiting for a flush to end now.",
		     (double)lc->waiters.n);
}

const char *lc_recent_path(const struct wbg_lifecycle *lc, size_t i)
{
	return i < WBG_RECENT_MAX ? lc->recent.v[i].path : NULL;
}
