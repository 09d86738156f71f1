/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's phase x event table (handover-phase.h) asserted
 * from its specification, cells below: the one list, written apart from
 * the table, of what each phase does with each event; every cell not listed
 * must end the handover as invalid. (test-handover-steps carries out each
 * cell of the table itself.) Then the diagram in docs/design.md (argv[1])
 * against the one the table draws. */
#include <stdlib.h>
#include <string.h>

#include "handover-expect.h"
#include "wbg-base.h"
#include "tap.h"

/* Every phase x event that may happen; any other must end the handover as
 * invalid. */
static const struct expect cells[] = {
	{ P(CHECKING), E(NOTHING), 0, P(ENDED), A(END), END(RECORDED) },
	{ P(CHECKING), E(NOTHING), G(CHARGED), P(CLEANUP), A(QUEUE_CLEANUP), END(NONE) },
	{ P(CHECKING), E(DIRTY), 0, P(FLUSHING), A(SUBMIT), END(NONE) },
	{ P(CHECKING), E(DIRTY), G(ASKED), P(FLUSHING), A(SUBMIT), END(NONE) },
	{ P(CHECKING), E(DIRTY), G(EXIT_ROUTE), P(FLUSHING), A(SUBMIT), END(NONE) },
	{ P(CHECKING), E(DIRTY), G(WATCH_ROUTE), P(DEFERRED), A(SAVE_PENDING), END(NONE) },

	{ P(FLUSHING), E(EMPTIED), 0, P(FLUSHING), A(SUBMIT), END(NONE) },
	{ P(FLUSHING), E(REMOVED), 0, P(FLUSHING), 0, END(NONE) },
	{ P(FLUSHING), E(REMOVED), G(EXIT_ROUTE), P(FLUSHING), 0, END(NONE) },
	{ P(FLUSHING), E(REPOPULATED), 0, P(FLUSHING), 0, END(NONE) },
	{ P(FLUSHING), E(FLUSHED), 0, P(AWAITING_REMOVAL), A(ANSWER), END(NONE) },
	{ P(FLUSHING), E(FLUSHED), G(NONE_STARTED), P(ENDED), A(END), END(RECORDED) },
	{ P(FLUSHING), E(FLUSHED), G(ASKED), P(ENDED), A(END), END(RECORDED) },
	{ P(FLUSHING), E(FLUSHED), G(GONE), P(CLEANUP), A(ANSWER) | A(ARM_STALL) | A(QUEUE_CLEANUP), END(NONE) },
	{ P(FLUSHING), E(FLUSHED), G(GONE) | G(ASKED), P(CLEANUP), A(ANSWER) | A(ARM_STALL) | A(QUEUE_CLEANUP), END(NONE) },
	{ P(FLUSHING), E(FLUSHED), G(GONE) | G(EXIT_ROUTE), P(CLEANUP), A(ANSWER) | A(WATCH) | A(QUEUE_CLEANUP), END(NONE) },
	{ P(FLUSHING), E(FLUSHED), G(GONE) | G(EXIT_ROUTE) | G(WAS_WATCHED), P(CLEANUP),
	  A(ANSWER) | A(ARM_STALL) | A(QUEUE_CLEANUP), END(NONE) },
	{ P(FLUSHING), E(EVIDENCE), 0, P(FLUSHING), A(NOTE_EVIDENCE), END(NONE) },
	{ P(FLUSHING), E(EVIDENCE), G(SOON), P(FLUSHING), A(NOTE_EVIDENCE), END(NONE) },
	{ P(FLUSHING), E(RELEASED), 0, P(FLUSHING), 0, END(NONE) },
	{ P(FLUSHING), E(STOP), 0, P(ENDED), A(UNWATCH) | A(KEEP_PENDING) | A(END), END(INTERRUPTED) },

	{ P(AWAITING_REMOVAL), E(EMPTIED), 0, P(FLUSHING), A(SUBMIT), END(NONE) },
	{ P(AWAITING_REMOVAL), E(REMOVED), 0, P(CLEANUP), A(QUEUE_CLEANUP), END(NONE) },
	{ P(AWAITING_REMOVAL), E(REMOVED), G(EXIT_ROUTE), P(CLEANUP), A(WATCH) | A(QUEUE_CLEANUP), END(NONE) },
	{ P(AWAITING_REMOVAL), E(REPOPULATED), 0, P(ENDED), A(END), END(RECORDED) },
	{ P(AWAITING_REMOVAL), E(STOP), 0, P(ENDED), A(END), END(RECORDED) },

	{ P(DEFERRED), E(EMPTIED), G(WATCH_ROUTE), P(DEFERRED), 0, END(NONE) },
	{ P(DEFERRED), E(REMOVED), G(WATCH_ROUTE), P(WATCHED), A(WATCH), END(NONE) },
	{ P(DEFERRED), E(REPOPULATED), G(WATCH_ROUTE), P(ENDED), A(END), END(CLEAN) },
	{ P(DEFERRED), E(STOP), G(WATCH_ROUTE), P(ENDED), A(KEEP_PENDING) | A(END), END(INTERRUPTED) },

	{ P(WATCHED), E(WATCH_REFUSED), G(GONE), P(FLUSHING), A(FLUSH_ALL), END(NONE) },
	{ P(WATCHED), E(DRAINED), G(GONE), P(CLEANUP), A(QUEUE_CLEANUP), END(NONE) },
	{ P(WATCHED), E(EVIDENCE), G(GONE), P(FLUSHING), A(FLUSH_INODES), END(NONE) },
	{ P(WATCHED), E(EVIDENCE), G(GONE) | G(SOON), P(WATCHED), A(NOTE_EVIDENCE), END(NONE) },
	{ P(WATCHED), E(AGED), G(GONE), P(FLUSHING), A(FLUSH_ALL), END(NONE) },
	{ P(WATCHED), E(AGED), G(GONE) | G(FLUSHED_BEFORE), P(ENDED), A(UNWATCH) | A(END), END(WATCHED) },
	{ P(WATCHED), E(RELEASED), G(GONE), P(ENDED), A(UNWATCH) | A(END), END(WATCHED) },
	{ P(WATCHED), E(STOP), G(GONE), P(ENDED), A(UNWATCH) | A(KEEP_PENDING) | A(END), END(INTERRUPTED) },

	{ P(CLEANUP), E(CLEANED), G(GONE), P(VERIFY), A(QUEUE_VERIFY), END(NONE) },
	{ P(CLEANUP), E(WATCH_REFUSED), G(GONE), P(CLEANUP), A(QUEUE_CLEANUP) | A(ANSWER), END(NONE) },
	{ P(CLEANUP), E(EVIDENCE), G(GONE), P(FLUSHING), A(FLUSH_INODES), END(NONE) },
	{ P(CLEANUP), E(EVIDENCE), G(GONE) | G(SOON), P(CLEANUP), A(NOTE_EVIDENCE), END(NONE) },
	{ P(CLEANUP), E(RELEASED), G(GONE), P(ENDED), A(UNWATCH) | A(END), END(WATCHED) },
	{ P(CLEANUP), E(STOP), G(GONE), P(ENDED), A(UNWATCH) | A(KEEP_PENDING) | A(END), END(INTERRUPTED) },

	{ P(VERIFY), E(VERIFIED), G(GONE), P(ENDED), A(UNWATCH) | A(END), END(WATCHED) },
	{ P(VERIFY), E(VERIFIED), G(GONE) | G(DIRTY), P(ENDED), A(UNWATCH) | A(END), END(WATCHED) },
	{ P(VERIFY), E(VERIFIED), G(GONE) | G(WATCH_AGAIN), P(WATCHED), A(ARM_STALL), END(NONE) },
	{ P(VERIFY), E(VERIFIED), G(GONE) | G(DIRTY) | G(WATCH_AGAIN), P(WATCHED), A(ARM_STALL), END(NONE) },
	{ P(VERIFY), E(EVIDENCE), G(GONE), P(FLUSHING), A(FLUSH_INODES), END(NONE) },
	{ P(VERIFY), E(EVIDENCE), G(GONE) | G(SOON), P(VERIFY), A(NOTE_EVIDENCE), END(NONE) },
	{ P(VERIFY), E(RELEASED), G(GONE), P(ENDED), A(UNWATCH) | A(END), END(WATCHED) },
	{ P(VERIFY), E(STOP), G(GONE), P(ENDED), A(UNWATCH) | A(KEEP_PENDING) | A(END), END(INTERRUPTED) },
};

#define ALL_GUARDS ((1U << _WBG_GUARD_COUNT) - 1)

/* The first expectation for a phase and event (with any guards). */
static const struct expect *listed(enum wbg_phase p, enum wbg_event e)
{
	for (size_t i = 0; i < ELEMENTSOF(cells); i++)
		if (cells[i].phase == p && cells[i].event == e)
			return &cells[i];
	return NULL;
}

/* The ```mermaid block after the marker in the design document. */
static char *design_diagram(const char *path)
{
	static const char marker[] = "<!-- handover-phase-diagram: generated by test-handover-phase -->\n```mermaid\n";
	_cleanup_free_ char *buf = NULL;
	char *start, *end;
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	buf = calloc(1, 1 << 20);
	n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!n)
		return NULL;
	start = strstr(buf, marker);
	if (!start)
		return NULL;
	start += strlen(marker);
	end = strstr(start, "```");
	return end ? strndup(start, (size_t)(end - start)) : NULL;
}

static bool is_invalid(struct wbg_step s, enum wbg_phase p)
{
	/* ends the handover; in ENDED (freed) it does nothing */
	return s.invalid && s.next == P(ENDED) && (p == P(ENDED) ? s.actions == 0 : s.actions == (A(UNWATCH) | A(END)));
}

/* Guards that make a phase and event invalid. */
static const struct expect refused[] = {
	{ P(DEFERRED), E(REMOVED), G(EXIT_ROUTE), P(ENDED), 0, END(NONE) }, /* deferred is the watch route's */
};

/* Whether an expectation or refusal for phase and event holds guard g:
 * then g matters there. */
static bool mentions(enum wbg_phase p, enum wbg_event e, unsigned g)
{
	for (size_t i = 0; i < ELEMENTSOF(cells); i++)
		if (cells[i].phase == p && cells[i].event == e && cells[i].guards & g)
			return true;
	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		if (refused[i].phase == p && refused[i].event == e && refused[i].guards & g)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	unsigned wrong = 0, invalid_ok = 0, n_invalid = 0, ended = 0;
	_cleanup_free_ char *drawn = NULL, *documented = NULL;
	size_t drawn_n = 0;
	FILE *f;

	if (argc > 1 && strcmp(argv[1], "--diagram") == 0) {
		handover_phase_diagram(stdout);
		return 0;
	}
	/* every expectation */
	for (size_t i = 0; i < ELEMENTSOF(cells); i++) {
		const struct expect *x = &cells[i];
		struct wbg_step s = handover_step(x->phase, x->event, x->guards);

		if (s.invalid || s.next != x->next || s.actions != x->actions || s.end != x->end) {
			wrong++;
			printf("# %s x %s (guards %#x): got %s (%#x%s), expected %s (%#x)\n", wbg_phase_to_string(x->phase),
			       wbg_event_to_string(x->event), x->guards, wbg_phase_to_string(s.next), s.actions,
			       s.invalid ? ", invalid" : "", wbg_phase_to_string(x->next), x->actions);
		}
	}
	CHECK(wrong == 0, "all %zu expected cells go where they should, with their actions and outcome", ELEMENTSOF(cells));
	wrong = 0;
	for (size_t i = 0; i < ELEMENTSOF(cells); i++)
		wrong += (cells[i].next == P(ENDED)) != (cells[i].end != WBG_END_NONE);
	CHECK(wrong == 0, "every cell that ends a handover names its outcome, and no other does");
	/* a phase and event no expectation names must not happen, whatever
	 * the guards */
	for (unsigned p = 0; p < _WBG_PHASE_MAX; p++)
		for (unsigned e = 0; e < _WBG_EVENT_MAX; e++) {
			if (listed(p, e))
				continue;
			n_invalid++;
			if (is_invalid(handover_step(p, e, 0), p) && is_invalid(handover_step(p, e, ALL_GUARDS), p))
				invalid_ok++;
			else
				printf("# %s x %s: not expected, but valid\n", wbg_phase_to_string(p), wbg_event_to_string(e));
		}
	CHECK(invalid_ok == n_invalid, "all %u other phase x event pairs end the handover as invalid (not an assertion)",
	      n_invalid);
	wrong = 0;
	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		wrong += !is_invalid(handover_step(refused[i].phase, refused[i].event, refused[i].guards), refused[i].phase);
	CHECK(wrong == 0, "a guard a cell refuses makes it invalid (a deferred handover on the exit route)");
	CHECK(handover_step(_WBG_PHASE_MAX, E(STOP), 0).invalid && handover_step(P(WATCHED), _WBG_EVENT_MAX, 0).invalid,
	      "out-of-range phases and events: invalid");
	/* guards a cell does not ask about change nothing */
	wrong = 0;
	for (size_t i = 0; i < ELEMENTSOF(cells); i++) {
		const struct expect *x = &cells[i];

		for (unsigned g = 0; g < _WBG_GUARD_COUNT; g++) {
			unsigned with = x->guards | (1U << g);
			struct wbg_step s = handover_step(x->phase, x->event, with);

			if (with == x->guards || mentions(x->phase, x->event, 1U << g))
				continue;
			if (s.invalid || s.next != x->next || s.actions != x->actions || s.end != x->end) {
				wrong++;
				printf("# %s x %s: guard %s changed it\n", wbg_phase_to_string(x->phase),
				       wbg_event_to_string(x->event), wbg_guard_to_string(1U << g));
			}
		}
	}
	CHECK(wrong == 0, "a guard no cell of a phase and event asks about leaves its step as it is");

	/* every phase but the end leads somewhere, and every one is reached */
	for (unsigned p = 0; p < _WBG_PHASE_MAX; p++) {
		bool reached = p == P(CHECKING);

		for (size_t i = 0; i < ELEMENTSOF(cells); i++)
			reached |= cells[i].next == p && cells[i].phase != p;
		ended += reached;
	}
	CHECK(ended == _WBG_PHASE_MAX, "every phase is reached from another");
	{
		bool all_stop = true;

		for (unsigned p = P(FLUSHING); p < P(ENDED); p++)
			all_stop &= listed(p, E(STOP)) && listed(p, E(STOP))->next == P(ENDED);
		CHECK(all_stop, "every phase a handover can wait in ends at a stop");
	}
	CHECK(handover_step(P(DEFERRED), E(STOP), G(WATCH_ROUTE)).actions & A(KEEP_PENDING),
	      "a stop keeps the pending record of a deferral");
	CHECK(handover_step(P(WATCHED), E(STOP), G(GONE)).actions & A(KEEP_PENDING),
	      "a stop keeps the pending record of a watch");
	CHECK(handover_step(P(FLUSHING), E(STOP), 0).actions & A(KEEP_PENDING),
	      "a stop keeps the pending record of a flush (the next start redoes them all)");
	CHECK(handover_step(P(WATCHED), E(AGED), G(GONE)).next == P(FLUSHING),
	      "max age, never flushed: flushed once");
	CHECK(handover_step(P(WATCHED), E(AGED), G(GONE) | G(FLUSHED_BEFORE)).next == P(ENDED),
	      "max age after a flush: given up");
	CHECK(strcmp(wbg_phase_to_string(P(AWAITING_REMOVAL)), "awaiting_removal") == 0, "a phase's name");
	CHECK(strcmp(wbg_event_to_string(E(FLUSHED)), "flushed") == 0, "an event's name");
	CHECK(strcmp(wbg_guard_to_string(G(WAS_WATCHED)), "was_watched") == 0, "a guard's name");
	CHECK(strcmp(wbg_action_to_string(A(QUEUE_CLEANUP)), "queue_cleanup") == 0, "an action's name");
	CHECK(strcmp(wbg_route_to_string(WBG_ROUTE_EXIT), "exit") == 0, "a route's name");
	CHECK(strcmp(wbg_end_to_string(WBG_END_INTERRUPTED), "interrupted") == 0, "an outcome's name");
	wrong = 0;
	for (unsigned e = 0; e < _WBG_EVENT_MAX; e++)
		wrong += strcmp(wbg_event_to_string(e), "?") == 0;
	for (unsigned g = 0; g < _WBG_GUARD_COUNT; g++)
		wrong += strcmp(wbg_guard_to_string(1U << g), "?") == 0;
	for (unsigned r = 0; r < _WBG_ROUTE_MAX; r++)
		wrong += strcmp(wbg_route_to_string(r), "?") == 0;
	CHECK(wrong == 0, "every event, guard and route has a name");
	CHECK(wbg_route_guards(WBG_ROUTE_WATCH) == G(WATCH_ROUTE) && wbg_route_guards(WBG_ROUTE_EXIT) == G(EXIT_ROUTE) &&
		      wbg_route_guards(WBG_ROUTE_ASKED) == G(ASKED) && wbg_route_guards(WBG_ROUTE_FLUSH) == 0,
	      "each route brings its guard");

	f = open_memstream(&drawn, &drawn_n);
	handover_phase_diagram(f);
	fclose(f);
	CHECK(drawn && strstr(drawn, "watched --> flushing: evidence / flush_inodes\n"),
	      "the diagram draws a cell with its actions");
	CHECK(drawn && strstr(drawn, "verify --> watched: verified [watch_again] / arm_stall\n"),
	      "the diagram draws a cell's guards");
	CHECK(drawn && strstr(drawn, "deferred --> ended: stop / keep_pending, end (interrupted)\n"),
	      "the diagram draws an ending cell's outcome");
	CHECK(drawn && strstr(drawn, "deferred --> watched: removed [not exit_route] / watch\n"),
	      "the diagram draws the guards a cell refuses");
	if (argc > 1) {
		documented = design_diagram(argv[1]);
		CHECK(documented && strcmp(documented, drawn) == 0,
		      "%s's diagram is the table's (regenerate: build/tests/test-handover-phase --diagram)", argv[1]);
		if (documented && strcmp(documented, drawn) != 0)
			printf("# the table draws:\n%s", drawn);
	} else if (argc == 1)
		printf("ok %d - # SKIP no design document given\n", ++tap_n);
	return tap_done();
}
