/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How a handover ends: the outcome its ending cell names, then counted,
 * recorded, answered and freed. */
#include <inttypes.h>
#include <stdlib.h>
#include <json-c/json.h>

#include "lifecycle-internal.h"
#include "wbg-base.h"
#include "wbg-cgroup.h"
#include "wbg-runtime.h"

/* The outcome an ending cell names (enum wbg_end); from: the phase it
 * left. */
static void end_outcome(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f, enum wbg_phase from,
			enum wbg_end end)
{
	if (h->was_watched)
		lc_watch_ended(lc, h);
	switch (end) {
	case WBG_END_CLEAN:
		handover_conclude(h, WBG_CAUSE_ENDED_CLEAN);
		break;
	case WBG_END_INTERRUPTED:
		/* a flush under way is redone whatever was recorded; a
		 * deferral or a watch only while nothing was */
		handover_conclude(h, from == WBG_PHASE_FLUSHING	   ? WBG_CAUSE_STOPPED_FLUSHING
				     : from == WBG_PHASE_DEFERRED ? WBG_CAUSE_STOPPED_DEFERRED
								  : WBG_CAUSE_STOPPED_WATCHED);
		break;
	case WBG_END_WATCHED:
		if (h->was_watched)
			lc_watch_outcome(h, f);
		break;
	default: /* recorded: retire() makes a pending one its flush's */
		break;
	}
}

/* The end of a handover: counted, recorded, answered, freed. */
static void retire(struct wbg_lifecycle *lc, struct wbg_handover *h)
{
	struct wbg_cgroup *c = registry_find_id(lc->reg, h->cgroup_id);
	struct wbg_container_names names;
	struct json_object *o;
	const char *json;

	handover_conclude(h, WBG_CAUSE_FLUSHES_DONE);
	if (c && c->handover == h)
		c->handover = NULL;
	if (h->t_first_flush) {
		/* on-evidence, the reaction is to the evidence, not to the
		 * removal that came long before it */
		uint64_t from = h->t_evidence && h->t_evidence <= h->t_first_flush ? h->t_evidence : h->t_trigger;

		hist_observe(&lc->end_stats.reaction, (double)(h->t_first_flush - from) / 1e6);
		if (h->t_flushed)
			hist_observe(&lc->end_stats.flush_duration, (double)(h->t_flushed - h->t_first_flush) / 1e6);
	}
	lc->end_stats.flushed_device_bytes += h->device_bytes;
	(void)lc_finish(lc, h);
	lc_forget_dirtied(lc, h->cgroup_id, WBG_FORGET_ENDED, h->t_removed != 0, h->was_watched);
	/* its next stall is news again (unwatching forgot a watched one),
	 * unless nothing could be flushed for it: then a report at every
	 * failed flush would only repeat this end */
	if (h->trigger == WBG_TRIGGER_STALL && !h->was_watched && h->outcome != WBG_OUTCOME_NO_TARGETS &&
	    h->outcome != WBG_OUTCOME_FAILED)
		lc->world.kernel->disarm(lc->world.kernel_data, h->cgroup_id);
	if (h->pending_saved)
		lc->world.flusher->pending_drop(lc->world.flusher_data, h->id);
	lc->end_stats.by[h->trigger][h->outcome]++;
	containers_names(lc->containers, h->path, &names);
	h->t_ended = lc_now(lc);
	o = handover_to_json(h, &names);
	json = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
	if (!json)
		log_oom();
	lc->world.audience->ended(lc->world.audience_data, h, json ? json : "{}");
	lc_reply_waiters(lc, h, wbg_outcome_to_string(h->outcome));
	lc_remember(lc, h, json ? json : "{}");
	json_object_put(o);
	handover_free(h);
}

void lc_end_init(struct wbg_lifecycle *lc)
{
	static const double reaction[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5 };
	static const double duration[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60 };

	hist_init(&lc->end_stats.reaction, reaction, ELEMENTSOF(reaction));
	hist_init(&lc->end_stats.flush_duration, duration, ELEMENTSOF(duration));
}

const struct wbg_end_stats *lc_end_stats(const struct wbg_lifecycle *lc)
{
	return &lc->end_stats;
}

uint64_t lifecycle_total(const struct wbg_lifecycle *lc)
{
	uint64_t n = 0;

	for (unsigned t = 0; t < _WBG_TRIGGER_MAX; t++)
		for (unsigned o = 0; o < _WBG_OUTCOME_MAX; o++)
			n += lc->end_stats.by[t][o];
	return n;
}

uint64_t lifecycle_flushed_device_bytes(const struct wbg_lifecycle *lc)
{
	return lc->end_stats.flushed_device_bytes;
}

void lc_end(struct wbg_lifecycle *lc, struct wbg_handover *h, struct wbg_fact f, enum wbg_phase from,
	    enum wbg_end end)
{
	end_outcome(lc, h, f, from, end);
	retire(lc, h);
}
