/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Every cell of the table (handover_cells()), carried out, with the guards
 * that select it and the state its phase implies, and again with each
 * other guard that leaves it the same cell: a handover put in the
 * cell's phase with the state its guards name (fixture() below), the
 * cell's event delivered with the event's own guards through the
 * lifecycle's real step (lc_run()), and then what the pretend world and the
 * lifecycle's state show: the phase reached, and for each action whether
 * its effect happened or did not. Then one cell that must not happen.
 * test-handover-phase checks the table itself; this one, that carry_out()
 * does what the table names, and nothing it does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handover-expect.h"
#include "lifecycle-internal.h"
#include "lifecycle-world.h"
#include "tap.h"

#define CGROUP 900
/* the guards the step adds itself, from the handover: the fixture's to
 * make hold, never the event's */
#define STATE_GUARDS (G(WATCH_ROUTE) | G(EXIT_ROUTE) | G(ASKED) | G(GONE) | G(WAS_WATCHED))
/* the event's plan names this device; the pretend planner's are 253:n */
#define PLAN_MAJOR 254

static enum wbg_route route_of(unsigned guards)
{
	return guards & G(WATCH_ROUTE) ? WBG_ROUTE_WATCH
	       : guards & G(EXIT_ROUTE) ? WBG_ROUTE_EXIT
	       : guards & G(ASKED)      ? WBG_ROUTE_ASKED
					: WBG_ROUTE_FLUSH;
}

/* Whether the cell's handover is in the watch table: where its phase or
 * its event says so (evidence and the release come for watched ones only,
 * lifecycle_evidence() and lifecycle_released() find them there; a refused
 * watch is no watch), or where its actions need it (ARM_STALL re-arms a
 * watched one, UNWATCH ends a watch). */
static bool is_watched(const struct expect *x)
{
	if (x->event == E(WATCH_REFUSED))
		return false;
	return x->phase == P(WATCHED) || x->guards & G(WAS_WATCHED) || x->event == E(EVIDENCE) ||
	       x->event == E(RELEASED) || x->actions & (A(ARM_STALL) | A(UNWATCH));
}

/* The event's plan: one target. */
static void one_target(struct wbg_plan *p)
{
	*p = (struct wbg_plan){ .t = calloc(1, sizeof(*p->t)), .source = "cell" };
	if (!p->t)
		abort();
	p->t[0] = (struct wbg_plan_target){ .dev = makedev(PLAN_MAJOR, 7), .kind = FLUSH_FS, .fstype = "ext4",
					    .mount = "/cell" };
	p->n = 1;
}

/* The test's fixture: a handover started with lc_start() and put in the
 * cell's phase as the lifecycle has one there. FLUSHING: its flush
 * running, entered through the real step (checking, dirty with plan: the
 * job submitted, its timeout armed, its record saved). Any other phase
 * after CHECKING: the phase set here, and its state-dir record saved (a
 * handover has one from its first plan on). Then: in the watch table
 * where is_watched() says (a watched flush is one of the watch's, counted
 * as carry_out() counts it), its route and its cgroup gone as the cell's
 * guards say, and an API caller waiting for it. It is on no batch: the
 * cells that queue it say so. */
static struct wbg_handover *fixture(const struct expect *x, struct wbg_plan *plan)
{
	struct wbg_handover *h = lc_start(&lc, CGROUP, "k/cell", WBG_TRIGGER_POPULATED_0);

	if (!h)
		abort();
	if (x->phase == P(FLUSHING))
		lc_run(&lc, h, fact(E(DIRTY), 0), plan); /* the route is flush's until set below */
	else if (x->phase != P(CHECKING)) {
		h->phase = x->phase;
		lc_save_pending(&lc, h, plan);
	}
	if (is_watched(x)) {
		/* into the table as a WATCH step would put it */
		if (lc_watch_observe(&lc, &(struct wbg_step_out){ .h = h, .actions = A(WATCH) }).event != LC_NO_EVENT)
			abort();
		h->flushes = x->phase == P(FLUSHING);
	}
	h->route = route_of(x->guards);
	h->t_removed = x->guards & G(GONE) ? world.now : 0;
	if (lc_waiter_add(&lc, h, &world.calls[0], 60 * S) < 0)
		abort();
	return h;
}

/* What the world and the lifecycle have seen so far. */
struct seen {
	unsigned n_sub, armed, disarmed, forgotten, pending_saves, pending_drops, ended, replies;
	size_t n_watched;
	uint64_t invalid_steps;
};

static struct seen seen_now(void)
{
	return (struct seen){ .n_sub = world.n_sub, .armed = world.armed, .disarmed = world.disarmed,
			      .forgotten = world.forgotten, .pending_saves = world.pending_saves,
			      .pending_drops = world.pending_drops, .ended = world.ended,
			      .replies = world.replies[0], .n_watched = lc.watch.n,
			      .invalid_steps = lc_engine_stats(&lc)->invalid_steps };
}

/* Jobs submitted since from: of the event's plan (event_plan), or of a
 * plan made now for purpose. */
static bool submitted(unsigned from, bool event_plan, enum flush_purpose purpose)
{
	for (unsigned i = from; i < world.n_sub; i++) {
		const struct submitted *s = &world.sub[i % ELEMENTSOF(world.sub)];

		if (event_plan ? major(s->dev) == PLAN_MAJOR : major(s->dev) != PLAN_MAJOR && s->purpose == purpose)
			return true;
	}
	return false;
}

/* Whether h is on a batch: the lifecycle's own list (lc.cleanup_head,
 * lc.verify_head), read as lifecycle.h lays it out; no accessor, for no
 * caller but a test asks which batch a handover is on. */
static bool on_batch(const struct wbg_handover *q, const struct wbg_handover *h)
{
	for (; q; q = q->queue_next)
		if (q == h)
			return true;
	return false;
}

static const char *cell_name(const struct expect *x)
{
	static char buf[192];
	const char *sep = " [";
	int n = snprintf(buf, sizeof(buf), "%s x %s", wbg_phase_to_string(x->phase), wbg_event_to_string(x->event));

	for (unsigned g = 0; g < _WBG_GUARD_COUNT; g++)
		if (x->guards & (1U << g)) {
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s", sep, wbg_guard_to_string(1U << g));
			sep = ", ";
		}
	if (x->guards)
		snprintf(buf + n, sizeof(buf) - (size_t)n, "]");
	return buf;
}

/* Each action's effect, as the world shows it, by the action's bit. */
static const char *const effect[_WBG_ACT_COUNT] = {
	"the event's plan submitted",
	"all of its data planned and submitted",
	"its own inodes planned and submitted",
	"its state-dir record written",
	"into the watch table",
	"re-armed",
	"evidence noted for later",
	"on the cleanup batch",
	"on the verify batch",
	"its waiting caller answered",
	"out of the watch table, disarmed and forgotten",
	"its state-dir record kept for the next start",
	"recorded and freed",
};

/* The cell x (invalid: one that must not happen, x its expected end) in
 * a fresh world: the fixture, the event, the checks. */
static void carry(const struct expect *x, bool invalid)
{
	const char *name;
	struct wbg_plan plan;
	struct wbg_handover *h;
	struct seen was, is;
	bool saved, ended, happened[_WBG_ACT_COUNT];
	uint64_t id;

	setup(false);
	one_target(&plan);
	h = fixture(x, &plan);
	id = h->id;
	saved = h->pending_saved;
	was = seen_now();
	lc_run(&lc, h, fact(x->event, x->guards & ~STATE_GUARDS), &plan);
	is = seen_now();
	ended = is.ended > was.ended; /* then h is freed: its fields are read only otherwise */
	name = cell_name(x);

	CHECK(ended ? x->next == P(ENDED) : h->phase == x->next, "%s: reaches %s", name,
	      wbg_phase_to_string(x->next));
	happened[0] = submitted(was.n_sub, true, 0);
	happened[1] = submitted(was.n_sub, false, FLUSH_FOR_HANDOVER);
	happened[2] = submitted(was.n_sub, false, FLUSH_FOR_EVIDENCE);
	happened[3] = is.pending_saves > was.pending_saves;
	happened[4] = is.n_watched > was.n_watched;
	happened[5] = was.n_watched && is.armed > was.armed;
	/* evidence_pending and verify_due: no accessor, read from the
	 * handover */
	happened[6] = !ended && h->evidence_pending;
	happened[7] = !ended && on_batch(lc.cleanup_head, h) && lc.cleanup_due;
	happened[8] = !ended && on_batch(lc.verify_head, h) && h->verify_due;
	happened[9] = is.replies > was.replies;
	happened[10] = is.n_watched < was.n_watched && is.disarmed > was.disarmed && is.forgotten > was.forgotten;
	/* kept: not dropped at the end; before it, no longer the handover's
	 * to drop (pending_saved, read from it) */
	happened[11] = saved && (ended ? is.pending_drops == was.pending_drops : !h->pending_saved);
	happened[12] = ended && is.ended == was.ended + 1 && !lifecycle_find(&lc, id);
	for (unsigned i = 0; i < _WBG_ACT_COUNT; i++) {
		unsigned a = 1U << i, want = x->actions & a;

		/* SUBMIT and the flushes write the record too (once: a
		 * record written stays), and the end answers whoever still
		 * waits (handover-phase.h) */
		if (a == A(SAVE_PENDING))
			want = x->actions & (A(SUBMIT) | A(FLUSH_ALL) | A(FLUSH_INODES) | A(SAVE_PENDING)) && !saved;
		if (a == A(ANSWER))
			want = x->actions & (A(ANSWER) | A(END));
		CHECK(happened[i] == !!want, "%s: %s: %s", name, effect[i], want ? "yes" : "no");
	}
	if (x->actions & A(WATCH))
		CHECK(world.armed == was.armed + 1 && !world.last_arm_stall_only, "%s: armed for either sign", name);
	if (x->actions & A(ARM_STALL) && !ended)
		CHECK(world.last_arm_stall_only == (h->flushes > 0), "%s: re-armed for %s", name,
		      h->flushes ? "the stall only, after a flush of ours" : "either sign, never flushed");
	CHECK((is.invalid_steps > was.invalid_steps) == invalid, "%s: counted as an invalid step: %s", name,
	      invalid ? "yes" : "no");
	if (ended) {
		CHECK(world.last_outcome != WBG_OUTCOME_PENDING, "%s: recorded with an outcome", name);
		/* the outcomes a cell fixes; recorded and watched ones
		 * depend on what came before (test-lifecycle*) */
		if (x->end == WBG_END_INTERRUPTED)
			CHECK(world.last_outcome == WBG_OUTCOME_INTERRUPTED, "%s: recorded as interrupted", name);
		if (x->end == WBG_END_CLEAN)
			CHECK(world.last_outcome == WBG_OUTCOME_CLEAN, "%s: recorded as clean", name);
		CHECK((world.last_reason && strncmp(world.last_reason, "lifecycle:", 10) == 0) == invalid,
		      "%s: the reason %s the lifecycle", name, invalid ? "names" : "does not name");
	}
	plan_free(&plan);
	teardown();
}

/* The state a phase implies: a handover waits in the watch's phases only
 * once its cgroup is gone, and defers only on the watch route. */
static unsigned implied(enum wbg_phase p)
{
	return p == P(WATCHED) || p == P(CLEANUP) || p == P(VERIFY) ? G(GONE) : p == P(DEFERRED) ? G(WATCH_ROUTE) : 0;
}

/* The state a phase rules out: a handover is watched only once its cgroup
 * is gone, and from then on never checks, defers or awaits a removal. */
static unsigned ruled_out(enum wbg_phase p)
{
	return p == P(CHECKING) || p == P(DEFERRED) || p == P(AWAITING_REMOVAL) ? G(WAS_WATCHED) : 0;
}

static bool same_step(const struct wbg_cell *c, unsigned guards)
{
	struct wbg_step s = handover_step(c->phase, c->event, guards);

	return !s.invalid && s.next == c->next && s.actions == c->actions && s.end == c->end;
}

static void test_cells(void)
{
	const unsigned route_guards = G(WATCH_ROUTE) | G(EXIT_ROUTE) | G(ASKED);
	const struct wbg_cell *t;
	size_t n = handover_cells(&t);
	unsigned shadowed = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned base = t[i].when | implied(t[i].phase);

		if (!same_step(&t[i], base)) {
			shadowed++;
			printf("# %s x %s: an earlier cell takes its guards\n", wbg_phase_to_string(t[i].phase),
			       wbg_event_to_string(t[i].event));
			continue;
		}
		/* its own guards, then each other guard that leaves it the
		 * same cell, then a route with the handover's state (its
		 * cgroup gone, watched before): a route only where it names
		 * none */
		for (unsigned k = 0; k <= _WBG_GUARD_COUNT + 6; k++) {
			static const unsigned routes[] = { G(WATCH_ROUTE), G(EXIT_ROUTE), G(ASKED) };
			unsigned g = k == _WBG_GUARD_COUNT	   ? 0
				     : k < _WBG_GUARD_COUNT ? 1U << k
							    : routes[(k - _WBG_GUARD_COUNT - 1) % 3] |
								(k - _WBG_GUARD_COUNT - 1 < 3 ? G(GONE) : G(WAS_WATCHED));

			if (g && (base & g || g & ruled_out(t[i].phase) || (g & route_guards && base & route_guards) ||
				  !same_step(&t[i], base | g)))
				continue;
			carry(&(const struct expect){ t[i].phase, t[i].event, base | g, t[i].next, t[i].actions, t[i].end },
			      false);
		}
	}
	CHECK(shadowed == 0, "each of the table's %zu cells is reached by its own guards", n);
}

/* A cell that must not happen: the cleanup batch's event for a watched
 * handover, which is on no batch. */
static void test_invalid(void)
{
	static const struct expect x = { P(WATCHED), E(CLEANED), G(GONE), P(ENDED), A(UNWATCH) | A(END), END(NONE) };

	carry(&x, true);
}

WORLD_MAIN(test_cells, test_invalid)
