/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The handover lifecycle as data: one named phase per handover and one step
 * function, (phase, event) -> (phase, actions), the only place a phase
 * changes. Events are facts the lifecycle's code has established (a plan,
 * a removal, a flush's end, a wb_stats read, a timer), with named guards
 * for what else held (the cgroup gone, the evidence too soon...); the
 * handover's route, fixed when it starts, is a guard too. The table
 * decides what follows; lifecycle.c's carry_out() does the actions it
 * names in the order of their bits, with two parts of one action
 * elsewhere: SUBMIT's state-dir record is written with SAVE_PENDING's, and
 * an ending watched handover's watch outcome is counted before UNWATCH.
 *
 * Every mode shares one pipeline after the removal: eager enters it at
 * FLUSHING, on-evidence at WATCHED (through DEFERRED while the emptied
 * cgroup still exists), the exit recipe at FLUSHING with its own inodes
 * written as the cgroup empties, and is watched from its removal on (for
 * what that flush missed); all go through CLEANUP (the batched scratch
 * cycle) and VERIFY (one wb_stats read per batch), and a watched one that
 * is dirty again goes back to WATCHED.
 *
 * A cell that must not happen ends the handover with the reason
 * "lifecycle: EVENT in PHASE" instead of asserting: a daemon on a shared
 * node keeps going, and the record says what broke.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

enum wbg_phase {
	WBG_PHASE_CHECKING,         /* started: what it has to write is being found out */
	WBG_PHASE_FLUSHING,         /* a flush of its data runs, bounded by [flush] timeout_sec */
	WBG_PHASE_AWAITING_REMOVAL, /* flushed while its cgroup still exists; the removal continues it */
	WBG_PHASE_DEFERRED,         /* on-evidence: emptied and dirty; its removal will be watched */
	WBG_PHASE_WATCHED,          /* removed; its dying wb watched for a drain or the evidence */
	WBG_PHASE_CLEANUP,          /* on the next scratch-cycle batch (the kernel's offline-wb cleanup) */
	WBG_PHASE_VERIFY,           /* on the next wb_stats read: is a dying wb of it still dirty */
	WBG_PHASE_ENDED,            /* recorded; freed */
	_WBG_PHASE_MAX,
};

/* Events are facts the lifecycle's code has established; what else held
 * then is said by guards (below), not by a variant of the event. */
enum wbg_event {
	WBG_EVENT_NOTHING,       /* nothing of its own to write (clean, children, disabled, no target, failed) */
	WBG_EVENT_DIRTY,         /* dirty, its plan at hand (the route says whether it is written now) */
	WBG_EVENT_EMPTIED,       /* populated 0 after a stop job's flush: what was written since, once more */
	WBG_EVENT_REMOVED,       /* its directory is gone */
	WBG_EVENT_REPOPULATED,   /* in use again before its removal */
	WBG_EVENT_WATCH_REFUSED, /* the watch table took no more */
	WBG_EVENT_FLUSHED,       /* every job of its flush ended (or timed out) */
	WBG_EVENT_DRAINED,       /* the watched wb has no dirty IO left (or, without wb_stats, is taken as so) */
	WBG_EVENT_EVIDENCE,      /* a live cgroup dirtied its inode, or a foreign flush to it failed */
	WBG_EVENT_AGED,          /* watched for watch_max_age_sec */
	WBG_EVENT_CLEANED,       /* the batch's scratch cycle ran (or could not) */
	WBG_EVENT_VERIFIED,      /* the batch's wb_stats read: is a dying wb of it still dirty */
	WBG_EVENT_RELEASED,      /* the kernel freed the cgroup: its wbs are gone with it */
	WBG_EVENT_STOP,          /* wbguardd stops: recorded as it stands */
	_WBG_EVENT_MAX,
};

/* A handover's route, fixed when it starts (when its first plan is made):
 * the path its data takes through the phases. */
enum wbg_route {
	WBG_ROUTE_FLUSH, /* written at once: eager, a recovered record, a BPF set maybe evicted */
	WBG_ROUTE_WATCH, /* on-evidence: nothing written until the evidence; its removal watched */
	WBG_ROUTE_EXIT,  /* the exit recipe: its own inodes written as it empties; its removal watched */
	WBG_ROUTE_ASKED, /* an API request on a live cgroup: its going-away is another handover */
	_WBG_ROUTE_MAX,
};

/* Guards: what else holds when an event comes. A cell of the table asks
 * for some to hold and others not to; the first cell that fits is taken.
 * The route's and the state's are the step's to add; the rest come with
 * the event, from the code that established it. */
enum wbg_guard {
	WBG_GUARD_WATCH_ROUTE = 1 << 0,    /* route: watch */
	WBG_GUARD_EXIT_ROUTE = 1 << 1,     /* route: exit */
	WBG_GUARD_ASKED = 1 << 2,          /* route: asked */
	WBG_GUARD_GONE = 1 << 3,           /* state: its cgroup directory is gone */
	WBG_GUARD_WAS_WATCHED = 1 << 4,    /* state: it has been in the watch table */
	WBG_GUARD_CHARGED = 1 << 5,        /* NOTHING: the cgroup gone, pages still charged to it (the cleanup moves them) */
	WBG_GUARD_NONE_STARTED = 1 << 6,   /* FLUSHED: no job could start, the cgroup still there */
	WBG_GUARD_SOON = 1 << 7,           /* EVIDENCE: a flush runs, reflush_sec not over or the cap: noted for later */
	WBG_GUARD_FLUSHED_BEFORE = 1 << 8, /* AGED: flushed already, and still dirty (given up) */
	WBG_GUARD_DIRTY = 1 << 9,          /* VERIFIED: a dying wb of it still has dirty IO */
	WBG_GUARD_WATCH_AGAIN = 1 << 10,   /* VERIFIED: ... or it may, and it is watched and young: watched again */
};
#define _WBG_GUARD_COUNT 11

/* An event with the guards its code established. */
struct wbg_fact {
	enum wbg_event event;
	unsigned guards;
};

/* What carry_out() does after the phase changed, in this order (above). */
enum wbg_action {
	WBG_ACT_SUBMIT = 1 << 0,          /* submit the plan at hand (the event's) */
	WBG_ACT_FLUSH_ALL = 1 << 1,       /* plan and submit all of its data */
	WBG_ACT_FLUSH_INODES = 1 << 2,    /* plan and submit its own inodes (the evidence flush) */
	WBG_ACT_SAVE_PENDING = 1 << 3,    /* its record in the state dir: a restart redoes it */
	WBG_ACT_WATCH = 1 << 4,           /* into the watch table, BPF armed for either sign */
	WBG_ACT_ARM_STALL = 1 << 5,       /* BPF re-armed for the stall itself (watched ones) */
	WBG_ACT_NOTE_EVIDENCE = 1 << 6,   /* a flush of its inodes is due reflush_sec after the last */
	WBG_ACT_QUEUE_CLEANUP = 1 << 7,   /* onto the cleanup batch */
	WBG_ACT_QUEUE_VERIFY = 1 << 8,    /* onto the verify batch */
	WBG_ACT_ANSWER = 1 << 9,          /* the flush is over: callers waiting for it answered */
	WBG_ACT_UNWATCH = 1 << 10,        /* out of the watch table, BPF disarmed, its sets forgotten */
	WBG_ACT_KEEP_PENDING = 1 << 11,   /* its state-dir record kept for the next start */
	WBG_ACT_END = 1 << 12,            /* recorded, answered, freed */
};
#define _WBG_ACT_COUNT 13

/* How a cell that ends a handover names its outcome. */
enum wbg_end {
	WBG_END_NONE,        /* the cell does not end it */
	WBG_END_RECORDED,    /* what its record says: the fact's finding (clean, no targets, children,
				disabled, failed), else its flush's (flushed, failed, timeout) */
	WBG_END_CLEAN,       /* nothing was written, and nothing needed to be */
	WBG_END_WATCHED,     /* a watched one's: drained by itself, else its flushes'; others as recorded */
	WBG_END_INTERRUPTED, /* wbguardd stopped first: the next start redoes what its pending record names */
	_WBG_END_MAX,
};

struct wbg_step {
	enum wbg_phase next;
	unsigned actions;
	enum wbg_end end; /* with WBG_ACT_END */
	bool invalid;     /* a cell that must not happen: ends the handover (failed) */
};

/* One cell of the table: in phase, event, with every guard of when holding
 * and none of unless, goes to next doing actions; a cell that ends the
 * handover names its outcome. */
struct wbg_cell {
	enum wbg_phase phase;
	enum wbg_event event;
	unsigned when, unless;
	enum wbg_phase next;
	unsigned actions;
	enum wbg_end end;
};

/* The table's cells in the order handover_step() tries them (for tests
 * that carry each one out, and the diagram). */
size_t handover_cells(const struct wbg_cell **ret_cells);

/* The one place a phase changes: what follows event in phase, with guards
 * (enum wbg_guard) holding. */
struct wbg_step handover_step(enum wbg_phase phase, enum wbg_event event, unsigned guards);
/* The guards a route brings. */
unsigned wbg_route_guards(enum wbg_route r);

const char *wbg_phase_to_string(enum wbg_phase p);
const char *wbg_event_to_string(enum wbg_event e);
const char *wbg_action_to_string(enum wbg_action a);
const char *wbg_guard_to_string(enum wbg_guard g);
const char *wbg_route_to_string(enum wbg_route r);
const char *wbg_end_to_string(enum wbg_end e);
/* The table as a Mermaid state diagram (docs/design.md holds its output;
 * a unit test checks that the two agree). */
void handover_phase_diagram(FILE *f);
