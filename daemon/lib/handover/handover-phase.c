/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "handover-phase.h"
#include "macro.h"

#define P(x) WBG_PHASE_##x
#define E(x) WBG_EVENT_##x
#define A(x) WBG_ACT_##x

struct cell {
	enum wbg_phase next;
	unsigned actions;
	bool valid;
};

#define GO(phase, acts) { .next = P(phase), .actions = (acts), .valid = true }
#define STAY(phase, acts) GO(phase, acts)

/* Every cell not named here must not happen. */
static const struct cell table[_WBG_PHASE_MAX][_WBG_EVENT_MAX] = {
	[P(CHECKING)] = {
		[E(NOTHING)] = GO(ENDED, A(END)),
		[E(NOTHING_GONE)] = GO(CLEANUP, A(QUEUE_CLEANUP)),
		[E(DIRTY)] = GO(FLUSHING, A(SUBMIT)),
		[E(DIRTY_WATCH)] = GO(DEFERRED, A(SAVE_PENDING)),
	},
	[P(FLUSHING)] = {
		/* the stop job's flush ran while its processes still wrote */
		[E(EMPTIED)] = STAY(FLUSHING, A(SUBMIT)),
		[E(REMOVED)] = STAY(FLUSHING, 0),
		[E(REMOVED_WATCH)] = STAY(FLUSHING, 0),
		[E(REPOPULATED)] = STAY(FLUSHING, 0),
		[E(FLUSHED)] = GO(AWAITING_REMOVAL, A(ANSWER)),
		[E(NONE_STARTED)] = GO(ENDED, A(END)),
		[E(FLUSHED_ASKED)] = GO(ENDED, A(END)),
		[E(FLUSHED_GONE)] = GO(CLEANUP, A(ANSWER) | A(ARM_STALL) | A(QUEUE_CLEANUP)),
		[E(FLUSHED_GONE_WATCH)] = GO(CLEANUP, A(ANSWER) | A(WATCH) | A(QUEUE_CLEANUP)),
		[E(EVIDENCE)] = STAY(FLUSHING, A(NOTE_EVIDENCE)),
		[E(EVIDENCE_SOON)] = STAY(FLUSHING, A(NOTE_EVIDENCE)),
		/* its wbs are gone, but the flush ends first */
		[E(RELEASED)] = STAY(FLUSHING, 0),
		[E(STOP)] = GO(ENDED, A(UNWATCH) | A(KEEP_PENDING) | A(END)),
	},
	[P(AWAITING_REMOVAL)] = {
		[E(EMPTIED)] = GO(FLUSHING, A(SUBMIT)),
		[E(REMOVED)] = GO(CLEANUP, A(QUEUE_CLEANUP)),
		/* the exit recipe: the kernel's own offline cleanup moved its
		 * inodes if the flush left the wb clean; the batch covers a
		 * wb dirtied since, and the watch a writer that keeps it so */
		[E(REMOVED_WATCH)] = GO(CLEANUP, A(WATCH) | A(QUEUE_CLEANUP)),
		[E(REPOPULATED)] = GO(ENDED, A(END)),
		[E(STOP)] = GO(ENDED, A(END)),
	},
	[P(DEFERRED)] = {
		[E(EMPTIED)] = STAY(DEFERRED, 0),
		[E(REMOVED)] = GO(WATCHED, A(WATCH)),
		[E(REPOPULATED)] = GO(ENDED, A(END)),
		[E(STOP)] = GO(ENDED, A(KEEP_PENDING) | A(END)),
	},
	[P(WATCHED)] = {
		[E(WATCH_REFUSED)] = GO(FLUSHING, A(FLUSH_ALL)),
		[E(DRAINED)] = GO(CLEANUP, A(QUEUE_CLEANUP)),
		[E(EVIDENCE)] = GO(FLUSHING, A(FLUSH_INODES)),
		[E(EVIDENCE_SOON)] = STAY(WATCHED, A(NOTE_EVIDENCE)),
		[E(MAX_AGE)] = GO(FLUSHING, A(FLUSH_ALL)),
		[E(EXPIRED)] = GO(ENDED, A(UNWATCH) | A(END)),
		[E(RELEASED)] = GO(ENDED, A(UNWATCH) | A(END)),
		[E(STOP)] = GO(ENDED, A(UNWATCH) | A(KEEP_PENDING) | A(END)),
	},
	[P(CLEANUP)] = {
		[E(CLEANED)] = GO(VERIFY, A(QUEUE_VERIFY)),
		/* the exit recipe's watch refused (the table full): answered,
		 * cleaned up and verified as eager's removals are */
		[E(WATCH_REFUSED)] = STAY(CLEANUP, A(QUEUE_CLEANUP) | A(ANSWER)),
		/* the writer waits now: evidence wins over the batch */
		[E(EVIDENCE)] = GO(FLUSHING, A(FLUSH_INODES)),
		[E(EVIDENCE_SOON)] = STAY(CLEANUP, A(NOTE_EVIDENCE)),
		[E(RELEASED)] = GO(ENDED, A(UNWATCH) | A(END)),
		/* its pending record kept: the cleanup may not have moved
		 * the dying wb's inodes yet */
		[E(STOP)] = GO(ENDED, A(UNWATCH) | A(KEEP_PENDING) | A(END)),
	},
	[P(VERIFY)] = {
		[E(VERIFIED)] = GO(ENDED, A(UNWATCH) | A(END)),
		[E(VERIFIED_DIRTY)] = GO(ENDED, A(UNWATCH) | A(END)),
		[E(REDIRTIED)] = GO(WATCHED, A(ARM_STALL)),
		[E(EVIDENCE)] = GO(FLUSHING, A(FLUSH_INODES)),
		[E(EVIDENCE_SOON)] = STAY(VERIFY, A(NOTE_EVIDENCE)),
		[E(RELEASED)] = GO(ENDED, A(UNWATCH) | A(END)),
		/* not verified clean yet: kept, as in the cleanup */
		[E(STOP)] = GO(ENDED, A(UNWATCH) | A(KEEP_PENDING) | A(END)),
	},
	/* ENDED: freed at once; nothing reaches it */
};

struct wbg_step handover_step(enum wbg_phase phase, enum wbg_event event)
{
	const struct cell *c;

	if ((unsigned)phase >= _WBG_PHASE_MAX || (unsigned)event >= _WBG_EVENT_MAX)
		return (struct wbg_step){ .next = P(ENDED), .actions = A(UNWATCH) | A(END), .invalid = true };
	if (phase == P(ENDED))
		return (struct wbg_step){ .next = P(ENDED), .invalid = true }; /* ended once */
	c = &table[phase][event];
	if (!c->valid)
		return (struct wbg_step){ .next = P(ENDED), .actions = A(UNWATCH) | A(END), .invalid = true };
	return (struct wbg_step){ .next = c->next, .actions = c->actions };
}

const char *wbg_phase_to_string(enum wbg_phase p)
{
	static const char *const s[] = {
		[P(CHECKING)] = "checking", [P(FLUSHING)] = "flushing", [P(AWAITING_REMOVAL)] = "awaiting_removal",
		[P(DEFERRED)] = "deferred", [P(WATCHED)] = "watched",   [P(CLEANUP)] = "cleanup",
		[P(VERIFY)] = "verify",     [P(ENDED)] = "ended",
	};

	return (unsigned)p < ELEMENTSOF(s) ? s[p] : "?";
}

const char *wbg_event_to_string(enum wbg_event e)
{
	static const char *const s[] = {
		[E(NOTHING)] = "nothing",
		[E(NOTHING_GONE)] = "nothing_gone",
		[E(DIRTY)] = "dirty",
		[E(DIRTY_WATCH)] = "dirty_watch",
		[E(EMPTIED)] = "emptied",
		[E(REMOVED)] = "removed",
		[E(REMOVED_WATCH)] = "removed_watch",
		[E(REPOPULATED)] = "repopulated",
		[E(WATCH_REFUSED)] = "watch_refused",
		[E(FLUSHED)] = "flushed",
		[E(NONE_STARTED)] = "none_started",
		[E(FLUSHED_ASKED)] = "flushed_asked",
		[E(FLUSHED_GONE)] = "flushed_gone",
		[E(FLUSHED_GONE_WATCH)] = "flushed_gone_watch",
		[E(DRAINED)] = "drained",
		[E(EVIDENCE)] = "evidence",
		[E(EVIDENCE_SOON)] = "evidence_soon",
		[E(MAX_AGE)] = "max_age",
		[E(EXPIRED)] = "expired",
		[E(CLEANED)] = "cleaned",
		[E(VERIFIED)] = "verified",
		[E(VERIFIED_DIRTY)] = "verified_dirty",
		[E(REDIRTIED)] = "redirtied",
		[E(RELEASED)] = "released",
		[E(STOP)] = "stop",
	};

	return (unsigned)e < ELEMENTSOF(s) ? s[e] : "?";
}

const char *wbg_action_to_string(enum wbg_action a)
{
	static const char *const s[_WBG_ACT_COUNT] = {
		"submit", "flush_all",      "flush_inodes", "save_pending", "watch",        "arm_stall", "note_evidence",
		"queue_cleanup", "queue_verify", "answer", "unwatch", "keep_pending", "end",
	};

	for (unsigned i = 0; i < _WBG_ACT_COUNT; i++)
		if ((unsigned)a == 1U << i)
			return s[i];
	return "?";
}

void handover_phase_diagram(FILE *f)
{
	fputs("stateDiagram-v2\n", f);
	fprintf(f, "    [*] --> %s\n", wbg_phase_to_string(P(CHECKING)));
	for (unsigned p = 0; p < _WBG_PHASE_MAX; p++)
		for (unsigned e = 0; e < _WBG_EVENT_MAX; e++) {
			const struct cell *c = &table[p][e];
			bool first = true;

			if (!c->valid)
				continue;
			fprintf(f, "    %s --> %s: %s", wbg_phase_to_string(p), wbg_phase_to_string(c->next),
				wbg_event_to_string(e));
			for (unsigned i = 0; i < _WBG_ACT_COUNT; i++)
				if (c->actions & (1U << i)) {
					fprintf(f, "%s%s", first ? " / " : ", ", wbg_action_to_string(1U << i));
					first = false;
				}
			fputc('\n', f);
		}
	fprintf(f, "    %s --> [*]\n", wbg_phase_to_string(P(ENDED)));
}
