/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The handover lifecycle as data: one named phase per handover and one step
 * function, (phase, event) -> (phase, actions), the only place a phase
 * changes. Events are facts the lifecycle's code has established (a plan,
 * a removal, a flush's end, a wb_stats read, a timer); the table decides
 * what follows; lifecycle.c's carry_out() does the actions it names in the
 * order of their bits, with two parts of one action elsewhere: SUBMIT's
 * state-dir record is written with SAVE_PENDING's, and an ending watched
 * handover's watch outcome is counted before UNWATCH.
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

enum wbg_event {
	WBG_EVENT_NOTHING,        /* nothing of its own to write (clean, children, disabled, no target) */
	WBG_EVENT_NOTHING_GONE,   /* ... the cgroup gone with pages charged to it: the cleanup still runs */
	WBG_EVENT_DIRTY,          /* dirty, flushed now (eager, an API request, recovery): its plan submitted */
	WBG_EVENT_DIRTY_WATCH,    /* dirty, on-evidence: nothing written until the evidence */
	WBG_EVENT_EMPTIED,        /* populated 0 after a stop job's flush: what was written since, once more */
	WBG_EVENT_REMOVED,        /* its directory is gone */
	WBG_EVENT_REMOVED_WATCH,  /* ... after the exit recipe's flush: cleaned up now, watched for what it missed */
	WBG_EVENT_REPOPULATED,    /* in use again before its removal */
	WBG_EVENT_WATCH_REFUSED,  /* the watch table took no more: flushed as eager would */
	WBG_EVENT_FLUSHED,        /* every job of its flush ended (or timed out); the cgroup still exists */
	WBG_EVENT_NONE_STARTED,   /* no job of its flush could start, the cgroup still there: its removal tries again */
	WBG_EVENT_FLUSHED_ASKED,  /* ... for an API request on a live cgroup: its going-away is another handover */
	WBG_EVENT_FLUSHED_GONE,   /* ... and the cgroup is gone */
	WBG_EVENT_FLUSHED_GONE_WATCH, /* ... the exit recipe's, the cgroup gone: watched for what it missed */
	WBG_EVENT_DRAINED,        /* the watched wb has no dirty IO left (or, without wb_stats, is taken as so) */
	WBG_EVENT_EVIDENCE,       /* a live cgroup dirtied its inode, or a foreign flush to it failed */
	WBG_EVENT_EVIDENCE_SOON,  /* ... while a flush runs or within reflush_sec of the last: noted for later */
	WBG_EVENT_MAX_AGE,        /* watched for watch_max_age_sec, never flushed: all of it written */
	WBG_EVENT_EXPIRED,        /* watched for watch_max_age_sec after its flushes: given up */
	WBG_EVENT_CLEANED,        /* the batch's scratch cycle ran (or could not) */
	WBG_EVENT_VERIFIED,       /* no dying wb of it is dirty (or nothing can say, and nothing is left to do) */
	WBG_EVENT_VERIFIED_DIRTY, /* one is still dirty, and it is not watched (or past its max age) */
	WBG_EVENT_REDIRTIED,      /* one is still dirty and it is watched: watched again, for the stall */
	WBG_EVENT_RELEASED,       /* the kernel freed the cgroup: its wbs are gone with it */
	WBG_EVENT_STOP,           /* wbguardd stops: recorded as it stands */
	_WBG_EVENT_MAX,
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

struct wbg_step {
	enum wbg_phase next;
	unsigned actions;
	bool invalid; /* a cell that must not happen: ends the handover */
};

/* The one place a phase changes: what follows event in phase. */
struct wbg_step handover_step(enum wbg_phase phase, enum wbg_event event);

const char *wbg_phase_to_string(enum wbg_phase p);
const char *wbg_event_to_string(enum wbg_event e);
const char *wbg_action_to_string(enum wbg_action a);
/* The table as a Mermaid state diagram (docs/design.md holds its output;
 * a unit test checks that the two agree). */
void handover_phase_diagram(FILE *f);
