/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A handover: what wbguardd does for one cgroup that is going away, from the
 * first sign (populated 1 -> 0, a stop job, the directory gone, an API
 * request) until its dirty data is written and the kernel has moved its
 * inodes off the dying wb. Every handover ends with an outcome, so a removal
 * is always either flushed or counted with the reason it was not.
 *
 * The planner (plan.h) decides what to flush; the flush pool does it; the
 * lifecycle (lifecycle.h) moves it through its phases (handover-phase.h);
 * its record (handover_to_json) says what happened.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wbg-cgroup.h"
#include "wbg-flush.h"
#include "handover-phase.h"

struct json_object;

enum wbg_trigger {
	WBG_TRIGGER_POPULATED_0,
	WBG_TRIGGER_STOP_JOB,
	WBG_TRIGGER_REMOVED,
	WBG_TRIGGER_RESCAN,
	WBG_TRIGGER_API,
	WBG_TRIGGER_RMDIR_BPF, /* a removal only the cgroup_rmdir tracepoint saw */
	WBG_TRIGGER_RECOVERED, /* in flight when the previous wbguardd was killed */
	WBG_TRIGGER_STALL,     /* the stall itself: a failed foreign flush to a dying cgroup nothing covered */
	_WBG_TRIGGER_MAX,
};

enum wbg_outcome {
	WBG_OUTCOME_PENDING,
	WBG_OUTCOME_FLUSHED,     /* all targets written */
	WBG_OUTCOME_CLEAN,       /* nothing was dirty: no flush needed */
	WBG_OUTCOME_NO_TARGETS,  /* dirty, but nothing to flush was found */
	WBG_OUTCOME_FAILED,      /* a target failed */
	WBG_OUTCOME_TIMEOUT,     /* a target did not finish in time */
	WBG_OUTCOME_DISABLED,    /* mitigation off (kernel has the fallback, or configured) */
	WBG_OUTCOME_CHILDREN,    /* a parent: its children's handovers cover it */
	WBG_OUTCOME_INTERRUPTED, /* wbguardd stopped during its flush: the next start redoes it */
	WBG_OUTCOME_DRAINED,     /* on-evidence: its dying wb drained by itself, no flush needed */
	_WBG_OUTCOME_MAX,
};

/* What a part of the lifecycle found that bears on how a handover ends.
 * handover_conclude() alone turns a cause into the outcome and reason the
 * record shows, by the rule each cause has there. */
enum wbg_cause {
	/* before any flush: set */
	WBG_CAUSE_CHILDREN,         /* a parent: its child cgroups have handovers of their own */
	WBG_CAUSE_CHILDREN_COVER,   /* dirtied nothing itself; its removed children's handovers cover it */
	WBG_CAUSE_MITIGATION_OFF,
	WBG_CAUSE_FLUSH_OFF,        /* [flush] enable = no */
	WBG_CAUSE_NOTHING_DIRTY,    /* memory.stat: file_dirty and file_writeback 0 */
	WBG_CAUSE_PLAN_FAILED,
	WBG_CAUSE_NO_FILESYSTEM,    /* dirty, no filesystem to flush found */
	WBG_CAUSE_EXCLUDED,         /* its filesystems are [flush] exclude_fstypes' */
	WBG_CAUSE_NOT_OWN,          /* dirty, but it dirtied no filesystem itself */
	WBG_CAUSE_NOTHING_RECORDED, /* nothing dirtied was recorded (clean) */
	WBG_CAUSE_FILESYSTEMS_GONE, /* recovered: its recorded filesystems are gone */
	WBG_CAUSE_NO_STALL_FS,      /* a stall: no filesystem on its device */
	/* its flush: set */
	WBG_CAUSE_OUT_OF_MEMORY,
	WBG_CAUSE_TIMEOUT,
	WBG_CAUSE_STOPPED_FLUSHING, /* wbguardd stopped during the flush */
	/* while nothing else was concluded */
	WBG_CAUSE_FLUSHES_DONE,       /* failed if a job failed, else flushed; its reason kept */
	WBG_CAUSE_STOPPED_DEFERRED,   /* wbguardd stopped before its removal */
	WBG_CAUSE_STOPPED_WATCHED,    /* ... while its dying wb was watched */
	WBG_CAUSE_WATCH_FLUSHED,      /* watched, flushed, then clean */
	WBG_CAUSE_WATCH_AGED_FLUSHED, /* ... flushed at watch_max_age_sec */
	WBG_CAUSE_WATCH_RELEASED,     /* drained: released by the kernel while watched */
	WBG_CAUSE_WATCH_NO_WB_STATS,  /* drained, as far as one can tell without wb_stats */
	WBG_CAUSE_WATCH_DRAINED,      /* its dying wb drained by itself */
	/* the outcome alone */
	WBG_CAUSE_ENDED_CLEAN, /* the table's clean end (repopulated while deferred) */
	/* a reason alone */
	WBG_CAUSE_REPOPULATED, /* in use again before its removal */
	WBG_CAUSE_JOB_RELOAD,  /* the systemd job that started it was a reload */
	WBG_CAUSE_JOB_NOT_STOP,
	WBG_CAUSE_JOB_DEVICE_REFUSED, /* a job: a block device node could not be opened */
	WBG_CAUSE_JOB_TIMED_OUT,
	WBG_CAUSE_JOB_FAILED,
	/* failed while nothing else was concluded; its reason always */
	WBG_CAUSE_INVALID_STEP,
	_WBG_CAUSE_MAX,
};

struct wbg_handover {
	uint64_t id;
	unsigned flush_round; /* its flushes so far: a job's waiter names the round (handover_waiter()) */
	enum wbg_phase phase; /* changed by the lifecycle's step alone (handover-phase.h) */
	/* on the cleanup or verify batch (lifecycle.h), by its phase */
	struct wbg_handover *queue_prev, *queue_next;
	struct wbg_handover *in_flight_next; /* FLUSHING: its timeout is due at t_timeout */
	uint64_t t_timeout;
	uint64_t verify_due;
	uint64_t cgroup_id;
	char *path;
	struct wbg_identity ident;
	uint64_t tenant; /* handover_tenant(): whose share of the watch table it takes */
	enum wbg_trigger trigger;
	enum wbg_outcome outcome;
	const char *reason; /* why, for outcomes other than FLUSHED */
	uint64_t dirty_bytes;    /* memory.stat file_dirty when triggered */
	bool dirty_known;
	const char *plan_source;
	unsigned n_targets, n_fs, n_bdev, n_inode_targets, n_pending, n_failed;
	unsigned n_excluded; /* filesystems left out by [flush] exclude_fstypes */
	uint64_t inodes_synced, inodes_skipped, inodes_gone, inodes_failed, device_bytes;
	/* CLOCK_MONOTONIC microseconds; 0 = did not happen */
	uint64_t t_trigger, t_first_flush, t_flushed, t_removed, t_cleanup;
	uint64_t t_ended;            /* when it was recorded (wbguardctl handovers' ENDED, AGE) */
	bool cleanup_done;           /* offline-wb cleanup re-run by the scratch cycle */
	bool replanned;              /* flushed again at populated 0 after a stop job */
	bool pending_saved;          /* its pending-<id>.json is on disk */
	bool not_own;                /* the dirty pages it was charged are not its own writes (no boost) */
	enum flush_purpose flush_purpose;  /* its current flush: all of it, its inodes' start (evidence), the exit recipe */
	enum wbg_route route;        /* fixed when it starts (handover-phase.h) */
	/* on-evidence: its place in the watch table (lifecycle.h) */
	bool watch;                  /* in the table now */
	bool watch_pooled;           /* its slot came from the pool of shares (share.h) */
	bool was_watched;            /* ever: its record says how the watch went */
	bool evidence_pending;       /* evidence came during a flush or within reflush_sec of one */
	bool quiet;                  /* no wb_stats: no stall for LC_QUIET_USEC after a flush */
	bool expired;                /* flushed because watch_max_age_sec passed undrained */
	bool wb_listed;              /* the last wb_stats read still listed a wb of it (inodes attached) */
	const char *watch_ended;     /* why its watch ended (lifecycle-watch.c), for the record */
	unsigned evidence;           /* foreign dirtyings of its inodes seen (events) */
	unsigned flushes;            /* flushes started while watched */
	uint64_t t_watch_added, t_watch, t_last_flush;
	uint64_t t_evidence;         /* the first evidence */
	dev_t stall_dev;             /* the stall's bdi: what to flush when BPF has nothing of it */
	struct wbg_inode_key evidence_inode; /* the last one BPF named (ino 0: none, or a stall) */
	struct {
		unsigned major, minor;
		char fstype[32];
		const char *how; /* "inodes", "syncfs", "bdev" */
	} target[8];                 /* the first targets, for the record */
	int verify;                  /* -1 not possible here, 0 dying wb still dirty, 1 clean */
};

/* The one writer of a handover's outcome and reason. */
void handover_conclude(struct wbg_handover *h, enum wbg_cause cause);
/* Its outcome as an answer now: a pending one is its flushes' so far. */
enum wbg_outcome handover_outcome_now(const struct wbg_handover *h);

struct wbg_handover *handover_new(uint64_t id, uint64_t cgroup_id, const char *path, enum wbg_trigger t,
				  uint64_t now);
void handover_free(struct wbg_handover *h);
/* A finished job for this handover. */
void handover_job_done(struct wbg_handover *h, const struct flush_job *j);
/* Its record; names: whose cgroup it was (containers.h), or NULL. */
struct wbg_container_names;
struct json_object *handover_to_json(const struct wbg_handover *h, const struct wbg_container_names *names);

/* Whether a handover that ended asks for the node-wide expiry boost: only
 * a failed or timed-out flush of the cgroup's own data, its own dirty data
 * with nothing found to flush, and, with [flush] enable = no, any removal
 * (the boost is then all there is). A dying wb still dirty at the check was dirtied again by a live
 * cgroup (a restarted container appending to the same file): no reason. */
bool handover_wants_boost(const struct wbg_handover *h, bool flush_enabled);
/* A flush job's waiter: the handover's id and its flush round, so that a
 * job of a round that timed out, finishing later, is not counted against
 * the next round's. Ids are below 2^53 (pending.h's WBG_IDS_MAX): the
 * round takes the top 11 bits (a job 2,048 rounds late would be taken for
 * its round's: a bound, not a ledger). */
#define HANDOVER_WAITER_ID_BITS 53
static inline uint64_t handover_waiter(const struct wbg_handover *h)
{
	return h->id | ((uint64_t)(h->flush_round & 0x7ff) << HANDOVER_WAITER_ID_BITS);
}

static inline uint64_t handover_waiter_id(uint64_t waiter)
{
	return waiter & ((1ULL << HANDOVER_WAITER_ID_BITS) - 1);
}

static inline bool handover_waiter_current(const struct wbg_handover *h, uint64_t waiter)
{
	return waiter == handover_waiter(h);
}

/* Whose a cgroup is, for per-tenant shares: its path's tenant prefix
 * (cgroup_tenant_len(): a pod's cgroup where the kubelet
 * puts pods, a user's user@UID.service, else the first two levels: a
 * service and whatever it delegates below). A hash of that prefix, never
 * 0; 0 for an unknown path (no tenant: the node-wide bounds alone). */
uint64_t handover_tenant(const char *path);

const char *wbg_trigger_to_string(enum wbg_trigger t);
const char *wbg_outcome_to_string(enum wbg_outcome o);
