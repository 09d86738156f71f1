/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle as the API asks it: FlushCgroup (a handover
 * started or found, and the caller answered or kept waiting for its
 * flush). Above the engine: it starts handovers through
 * lifecycle_event(), as any news does. */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <string.h>

#include "lifecycle.h"
#include "lifecycle-internal.h"

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

static int answer(struct wbg_lifecycle *lc, void *call, const struct wbg_recent *r, uint64_t id)
{
	lc->world.audience->reply(lc->world.audience_data, call, r ? r->id : id, r ? r->outcome : "unknown", r ? r->reason : NULL);
	return 1;
}

int lifecycle_flush_request(struct wbg_lifecycle *lc, struct wbg_cgroup *c, const char *path, uint64_t timeout_usec,
			    void *call)
{
	struct path_lookup l = { .path = path };
	struct wbg_handover *h;
	int r;

	if (c && !c->removed && c->in_scope) {
		if (!c->handover) {
			uint64_t id = lifecycle_event(lc, c, WBG_TRIGGER_API);

			if (!c->handover) /* over already (clean, flush disabled...) */
				return answer(lc, call, id ? lc_recent_by(lc, id, "") : NULL, id);
		}
		h = c->handover;
	} else {
		lc_active_walk(lc, match_active, &l);
		h = l.found;
	}
	if (!h) {
		const struct wbg_recent *done = lc_recent_by(lc, 0, path);

		return done ? answer(lc, call, done, 0) : -ENOENT;
	}
	switch (h->phase) {
	case WBG_PHASE_FLUSHING:
		break; /* waited for, below */
	case WBG_PHASE_DEFERRED:
	case WBG_PHASE_WATCHED:
		/* on-evidence: nothing is written until a live cgroup dirties
		 * its files, which may be never: a watch is an answer */
		lc->world.audience->reply(lc->world.audience_data, call, h->id, "watched",
			       "on-evidence: its dying wb is watched, and written when a live cgroup dirties its files");
		return 1;
	default: /* its flush is over (or there was none), or being checked */
		lc->world.audience->reply(lc->world.audience_data, call, h->id,
			       h->outcome != WBG_OUTCOME_PENDING ? wbg_outcome_to_string(h->outcome)
			       : !h->was_watched		 ? "pending"
			       : h->flushes			 ? "flushed"
								 : "watched",
			       h->reason);
		return 1;
	}
	if (timeout_usec == 0) {
		lc->world.audience->reply(lc->world.audience_data, call, h->id, "pending", "not waited for");
		return 1;
	}
	r = lc_waiter_add(lc, h, call, timeout_usec);
	if (r < 0)
		return r;
	lc_reschedule(lc);
	return 1;
}

