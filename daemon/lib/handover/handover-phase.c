/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "handover-phase.h"
#include "wbg-base.h"

#define P(x) WBG_PHASE_##x
#define E(x) WBG_EVENT_##x
#define A(x) WBG_ACT_##x

#define G(x) WBG_GUARD_##x

#define ON(ph, ev, w, u, nx, acts) { P(ph), E(ev), (w), (u), P(nx), (acts), WBG_END_NONE }
#define END(ph, ev, w, u, outcome, acts) { P(ph), E(ev), (w), (u), P(ENDED), (acts) | A(END), WBG_END_##outcome }
#define ANY 0

/* The whole lifecycle. For each phase and event the cells are tried in
 * order, so a cell with guards comes before the one without; a phase and
 * event with no cell that fits must not happen. */
static const struct wbg_cell table[] = {
	/* CHECKING: what the first plan found */
	ON(CHECKING, NOTHING, G(CHARGED), ANY, CLEANUP, A(QUEUE_CLEANUP)),
	END(CHECKING, NOTHING, ANY, ANY, RECORDED, 0),
	ON(CHECKING, DIRTY, G(WATCH_ROUTE), ANY, DEFERRED, A(SAVE_PENDING)),
	ON(CHECKING, DIRTY, ANY, G(WATCH_ROUTE), FLUSHING, A(SUBMIT)),

	/* FLUSHING: the stop job's flush ran while its processes still wrote */
	ON(FLUSHING, EMPTIED, ANY, ANY, FLUSHING, A(SUBMIT)),
	ON(FLUSHING, REMOVED, ANY, ANY, FLUSHING, 0),
	ON(FLUSHING, REPOPULATED, ANY, ANY, FLUSHING, 0),
	END(FLUSHING, FLUSHED, G(NONE_STARTED), ANY, RECORDED, 0),
	/* the exit recipe's flush, the cgroup gone: watched for what it missed */
	ON(FLUSHING, FLUSHED, G(GONE) | G(EXIT_ROUTE), G(WAS_WATCHED), CLEANUP, A(ANSWER) | A(WATCH) | A(QUEUE_CLEANUP)),
	ON(FLUSHING, FLUSHED, G(GONE), ANY, CLEANUP, A(ANSWER) | A(ARM_STALL) | A(QUEUE_CLEANUP)),
	END(FLUSHING, FLUSHED, G(ASKED), ANY, RECORDED, 0),
	ON(FLUSHING, FLUSHED, ANY, ANY, AWAITING_REMOVAL, A(ANSWER)),
	ON(FLUSHING, EVIDENCE, ANY, ANY, FLUSHING, A(NOTE_EVIDENCE)),
	/* its wbs are gone, but the flush ends first */
	ON(FLUSHING, RELEASED, ANY, ANY, FLUSHING, 0),
	END(FLUSHING, STOP, ANY, ANY, INTERRUPTED, A(UNWATCH) | A(KEEP_PENDING)),

	ON(AWAITING_REMOVAL, EMPTIED, ANY, ANY, FLUSHING, A(SUBMIT)),
	/* the exit recipe: the kernel's own offline cleanup moved its inodes
	 * if the flush left the wb clean; the batch covers a wb dirtied
	 * since, and the watch a writer that keeps it so */
	ON(AWAITING_REMOVAL, REMOVED, G(EXIT_ROUTE), ANY, CLEANUP, A(WATCH) | A(QUEUE_CLEANUP)),
	ON(AWAITING_REMOVAL, REMOVED, ANY, ANY, CLEANUP, A(QUEUE_CLEANUP)),
	END(AWAITING_REMOVAL, REPOPULATED, ANY, ANY, RECORDED, 0),
	END(AWAITING_REMOVAL, STOP, ANY, ANY, RECORDED, 0),

	ON(DEFERRED, EMPTIED, ANY, ANY, DEFERRED, 0),
	ON(DEFERRED, REMOVED, ANY, G(EXIT_ROUTE), WATCHED, A(WATCH)),
	END(DEFERRED, REPOPULATED, ANY, ANY, CLEAN, 0),
	END(DEFERRED, STOP, ANY, ANY, INTERRUPTED, A(KEEP_PENDING)),

	/* the watch table full: flushed as eager would */
	ON(WATCHED, WATCH_REFUSED, ANY, ANY, FLUSHING, A(FLUSH_ALL)),
	ON(WATCHED, DRAINED, ANY, ANY, CLEANUP, A(QUEUE_CLEANUP)),
	ON(WATCHED, EVIDENCE, G(SOON), ANY, WATCHED, A(NOTE_EVIDENCE)),
	ON(WATCHED, EVIDENCE, ANY, ANY, FLUSHING, A(FLUSH_INODES)),
	/* flushed, and still dirty or stalling at its max age: given up */
	END(WATCHED, AGED, G(FLUSHED_BEFORE), ANY, WATCHED, A(UNWATCH)),
	/* never flushed: the kernel should have drained it; flushed now */
	ON(WATCHED, AGED, ANY, ANY, FLUSHING, A(FLUSH_ALL)),
	END(WATCHED, RELEASED, ANY, ANY, WATCHED, A(UNWATCH)),
	END(WATCHED, STOP, ANY, ANY, INTERRUPTED, A(UNWATCH) | A(KEEP_PENDING)),

	ON(CLEANUP, CLEANED, ANY, ANY, VERIFY, A(QUEUE_VERIFY)),
	/* the exit recipe's watch refused (the table full): answered,
	 * cleaned up and verified as eager's removals are */
	ON(CLEANUP, WATCH_REFUSED, ANY, ANY, CLEANUP, A(QUEUE_CLEANUP) | A(ANSWER)),
	/* the writer waits now: evidence wins over the batch */
	ON(CLEANUP, EVIDENCE, G(SOON), ANY, CLEANUP, A(NOTE_EVIDENCE)),
	ON(CLEANUP, EVIDENCE, ANY, ANY, FLUSHING, A(FLUSH_INODES)),
	END(CLEANUP, RELEASED, ANY, ANY, WATCHED, A(UNWATCH)),
	/* its pending record kept: the cleanup may not have moved the
	 * dying wb's inodes yet */
	END(CLEANUP, STOP, ANY, ANY, INTERRUPTED, A(UNWATCH) | A(KEEP_PENDING)),

	/* dirtied again by a writer still on the dying wb: watched again */
	ON(VERIFY, VERIFIED, G(WATCH_AGAIN), ANY, WATCHED, A(ARM_STALL)),
	END(VERIFY, VERIFIED, ANY, ANY, WATCHED, A(UNWATCH)),
	ON(VERIFY, EVIDENCE, G(SOON), ANY, VERIFY, A(NOTE_EVIDENCE)),
	ON(VERIFY, EVIDENCE, ANY, ANY, FLUSHING, A(FLUSH_INODES)),
	END(VERIFY, RELEASED, ANY, ANY, WATCHED, A(UNWATCH)),
	/* not verified clean yet: kept, as in the cleanup */
	END(VERIFY, STOP, ANY, ANY, INTERRUPTED, A(UNWATCH) | A(KEEP_PENDING)),
	/* ENDED: freed at once; nothing reaches it */
};

static const struct wbg_step invalid = { .next = P(ENDED), .actions = A(UNWATCH) | A(END), .invalid = true };

struct wbg_step handover_step(enum wbg_phase phase, enum wbg_event event, unsigned guards)
{
	if (phase == P(ENDED))
		return (struct wbg_step){ .next = P(ENDED), .invalid = true }; /* ended once */
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		const struct wbg_cell *c = &table[i];

		if (c->phase == phase && c->event == event && (guards & c->when) == c->when && !(guards & c->unless))
			return (struct wbg_step){ .next = c->next, .actions = c->actions, .end = c->end };
	}
	return invalid;
}

size_t handover_cells(const struct wbg_cell **ret_cells)
{
	*ret_cells = table;
	return ELEMENTSOF(table);
}

unsigned wbg_route_guards(enum wbg_route r)
{
	return r == WBG_ROUTE_WATCH ? G(WATCH_ROUTE) : r == WBG_ROUTE_EXIT ? G(EXIT_ROUTE) : r == WBG_ROUTE_ASKED ? G(ASKED) : 0;
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
		[E(NOTHING)] = "nothing",	      [E(DIRTY)] = "dirty",	[E(EMPTIED)] = "emptied",
		[E(REMOVED)] = "removed",	      [E(REPOPULATED)] = "repopulated", [E(WATCH_REFUSED)] = "watch_refused",
		[E(FLUSHED)] = "flushed",	      [E(DRAINED)] = "drained", [E(EVIDENCE)] = "evidence",
		[E(AGED)] = "aged",		      [E(CLEANED)] = "cleaned", [E(VERIFIED)] = "verified",
		[E(RELEASED)] = "released",	      [E(STOP)] = "stop",
	};

	return (unsigned)e < ELEMENTSOF(s) ? s[e] : "?";
}

const char *wbg_route_to_string(enum wbg_route r)
{
	static const char *const s[] = { "flush", "watch", "exit", "asked" };

	return (unsigned)r < ELEMENTSOF(s) ? s[r] : "?";
}

const char *wbg_end_to_string(enum wbg_end e)
{
	static const char *const s[] = { "none", "recorded", "clean", "watched", "interrupted" };

	return (unsigned)e < ELEMENTSOF(s) ? s[e] : "?";
}

const char *wbg_guard_to_string(enum wbg_guard g)
{
	static const char *const s[_WBG_GUARD_COUNT] = {
		"watch_route", "exit_route", "asked", "gone", "was_watched", "charged",
		"none_started", "soon", "flushed_before", "dirty", "watch_again",
	};

	for (unsigned i = 0; i < _WBG_GUARD_COUNT; i++)
		if ((unsigned)g == 1U << i)
			return s[i];
	return "?";
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

static void print_flags(FILE *f, unsigned flags, unsigned count, const char *(*name)(unsigned), const char *neg,
			const char **sep)
{
	for (unsigned i = 0; i < count; i++)
		if (flags & (1U << i)) {
			fprintf(f, "%s%s%s", *sep, neg, name(1U << i));
			*sep = ", ";
		}
}

static const char *guard_name(unsigned g)
{
	return wbg_guard_to_string(g);
}

static const char *action_name(unsigned a)
{
	return wbg_action_to_string(a);
}

void handover_phase_diagram(FILE *f)
{
	fputs("stateDiagram-v2\n", f);
	fprintf(f, "    [*] --> %s\n", wbg_phase_to_string(P(CHECKING)));
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		const struct wbg_cell *c = &table[i];
		const char *sep = " [";

		fprintf(f, "    %s --> %s: %s", wbg_phase_to_string(c->phase), wbg_phase_to_string(c->next),
			wbg_event_to_string(c->event));
		print_flags(f, c->when, _WBG_GUARD_COUNT, guard_name, "", &sep);
		print_flags(f, c->unless, _WBG_GUARD_COUNT, guard_name, "not ", &sep);
		if (c->when || c->unless)
			fputc(']', f);
		sep = " / ";
		print_flags(f, c->actions, _WBG_ACT_COUNT, action_name, "", &sep);
		if (c->end != WBG_END_NONE)
			fprintf(f, " (%s)", wbg_end_to_string(c->end));
		fputc('\n', f);
	}
	fprintf(f, "    %s --> [*]\n", wbg_phase_to_string(P(ENDED)));
}
