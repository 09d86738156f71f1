/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The handover lifecycle: every handover from its trigger (populated 1 -> 0,
 * a stop job, the directory gone, an API request, a restart's recovery) to
 * its record, with the decisions on the way: whether anything needs writing
 * (clean, disabled, a parent whose children cover it, dirty pages that are
 * not its own), what to flush, when its flush has timed out, and, once the
 * cgroup is gone, the batched scratch cycle and the dying-wb check. With
 * [flush] mode = on-evidence a removal is watched instead of flushed: the
 * watch table below, whose dying wbs are flushed when a live cgroup dirties
 * them (the stall's first sign) and cleaned up once they drain.
 *
 * Each handover has one phase, changed only by handover_step()
 * (handover-phase.h); this module finds out the facts (plans, removals,
 * flush ends, wb_stats, timers) and carries out the actions the step names.
 *
 * It owns the handovers in flight, the cleanup and verify batches, the
 * recent ring the API answers from, and the API's flush waiters. Everything
 * it does to the world (plan, submit to the pool, the scratch cycle, dirty
 * counters, wb_stats, BPF arming, the state dir, the record, the clock and
 * the one timer) goes through struct wbg_lifecycle_world's ops tables, so unit tests drive every
 * transition with fakes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wbg-runtime.h"
#include "wbg-flush.h"
#include "handover.h"
#include "wbg-metrics.h"
#include "pending.h"
#include "wbg-kernel.h"
#include "wbg-base.h"
#include "wbg-cgroup.h"

#define WBG_RECENT_MAX 256 /* finished handovers kept for the API */
#define WBG_FLUSH_WAITERS_MAX 256
#define WBG_FLUSH_WAITERS_PER_TENANT 64
/* How long removals gather before one scratch cycle serves them all: under
 * churn, at most 20 cycles a second whatever the removal rate. */
#define WBG_CLEANUP_BATCH_USEC (50 * 1000)
/* How long after the scratch cycle the kernel's cleanup work has run. */
#define WBG_VERIFY_DELAY_USEC (200 * 1000)
/* How often the watch table is looked at while it holds entries: one read
 * of wb_stats per bdi. */
#define LC_WATCH_TICK_USEC (1000ULL * 1000)
/* Without wb_stats (before 6.10), how long a flushed cgroup must go without
 * the stall (an -ENOENT foreign flush) before its watch ends: a stalled
 * writer's flushes fail every few seconds. */
#define LC_QUIET_USEC (10ULL * 1000 * 1000)

/* The lifecycle's world, by concern: each table is small, and a test double of
 * one concern leaves the others alone. Each with its own object (struct wbg_lifecycle_world). */
struct wbg_clock_ops {
	uint64_t (*now)(void *userdata); /* CLOCK_MONOTONIC, usec */
	/* Call lifecycle_tick() at usec, or sooner. */
	void (*schedule)(void *userdata, uint64_t usec);
};

/* What to write, the pool that writes it, and the state dir's record of
 * it. */
struct wbg_flusher_ops {
	/* What to flush for a cgroup: what it dirtied (c, while it is tracked,
	 * may say what its mount namespace showed); inodes: its inode sets
	 * too. plan_mounts: every filesystem. plan_recorded: what a previous
	 * run's record named. */
	int (*plan)(void *userdata, uint64_t cgroup_id, const struct wbg_cgroup *c, bool inodes, struct wbg_plan *ret);
	int (*plan_mounts)(void *userdata, struct wbg_plan *ret);
	int (*plan_recorded)(void *userdata, const dev_t *devs, const bool *bdev, size_t n, struct wbg_plan *ret);
	/* One target as a pool job; lifecycle_job_done() follows. -EBUSY: the
	 * target takes no more (its flush hangs). */
	int (*submit)(void *userdata, const struct wbg_plan_target *t, enum flush_purpose purpose, uint64_t handover_id);
	/* A flush timed out: workers stuck in the kernel are replaced. */
	void (*timed_out)(void *userdata);
	/* The state dir's record of a flush in flight or a watch (pending.h). */
	int (*pending_save)(void *userdata, const struct wbg_handover *h, const struct wbg_plan *plan);
	void (*pending_drop)(void *userdata, uint64_t handover_id);
};

/* The kernel: memory.stat, cgroupfs, the scratch cycle, wb_stats, BPF. */
struct wbg_kernel_ops {
	/* memory.stat file_dirty and file_writeback of a live cgroup. */
	int (*read_dirty)(void *userdata, const char *path, uint64_t *ret_dirty, uint64_t *ret_writeback);
	bool (*has_children)(void *userdata, const char *path);
	/* One scratch memcg cycle: the kernel re-runs its offline-wb cleanup
	 * (-EOPNOTSUPP: none here). */
	int (*cleanup)(void *userdata);
	/* wb_stats: the cgroup inodes with a wb with dirty IO and with a wb
	 * listed at all (wbstats.h); -ENOENT when the kernel cannot say. */
	int (*census)(void *userdata, struct wbg_wb_census *ret);
	/* BPF: one evidence event for a watched cgroup at the next foreign
	 * dirtying or -ENOENT foreign flush (stall_only: at the next -ENOENT
	 * only); forget: what it dirtied is no longer needed. */
	int (*arm)(void *userdata, uint64_t cgroup_id, bool stall_only);
	void (*disarm)(void *userdata, uint64_t cgroup_id);
	void (*forget)(void *userdata, uint64_t cgroup_id);
};

/* Who hears how it went: the record, and API callers. */
struct wbg_audience_ops {
	/* The handover is over: json is its record. Called once, before it
	 * is freed. */
	void (*ended)(void *userdata, const struct wbg_handover *h, const char *json);
	/* API callers: the answer to one, and keeping or dropping one that
	 * waits. */
	void (*reply)(void *userdata, void *call, uint64_t handover_id, const char *outcome, const char *reason);
	void *(*call_ref)(void *userdata, void *call);
	void (*call_unref)(void *userdata, void *call);
};

/* The world as the lifecycle sees it: each concern's ops with the object
 * they act on, so the host's flusher and kernel (lifecycle-host.h) and the
 * daemon's clock and audience (its event loop, bus and journal) are parts
 * of their own, and a test fakes any one of them. */
struct wbg_lifecycle_world {
	const struct wbg_clock_ops *clock;
	void *clock_data;
	const struct wbg_flusher_ops *flusher;
	void *flusher_data;
	const struct wbg_kernel_ops *kernel;
	void *kernel_data;
	const struct wbg_audience_ops *audience;
	void *audience_data;
};

struct wbg_watch_params {
	size_t max;                /* [flush] watch_max: handovers watched at once */
	size_t max_per_tenant;     /* [flush] watch_max_per_tenant: of one tenant (handover_tenant()) */
	uint64_t drain_after_usec; /* without wb_stats: when a wb is taken as drained */
	uint64_t max_age_usec;     /* not drained by then: flushed; still dirty after: given up */
	uint64_t reflush_usec;     /* at least this between two flushes of one cgroup */
	unsigned evidence_per_sec; /* evidence flushes node-wide, a second (0: no cap); the rest wait */
};

struct wbg_lifecycle_params {
	uint64_t timeout_usec; /* [flush] timeout_sec */
	bool flush;            /* [flush] enable */
	bool on_evidence;      /* removals are watched, not flushed */
	bool at_exit;          /* the exit recipe: own inodes written as a cgroup empties, its removal watched */
	struct wbg_watch_params watch;
};

/* How watches ended (wbguard_dying_ended_total{end}). */
enum wbg_watch_end {
	WBG_WATCH_END_DRAINED,    /* clean without a flush of ours */
	WBG_WATCH_END_FLUSHED,    /* flushed (on evidence or at max_age), then clean */
	WBG_WATCH_END_UNVERIFIED, /* no wb_stats: nothing could check it */
	WBG_WATCH_END_DIRTY,      /* still dirty at max_age: given up */
	WBG_WATCH_END_DROPPED,    /* released by the kernel, or wbguardd stopping */
	_WBG_WATCH_END_MAX,
};

struct wbg_watch_stats {
	uint64_t added, evidence, evidence_ignored, flushes, flush_failures, expired,
		ended[_WBG_WATCH_END_MAX];
	uint64_t evidence_capped; /* evidence flushes put off by the node-wide cap */
	uint64_t evidence_tenant_capped; /* ... by their tenant's quarter of it */
	/* handovers (watched or not) after which wb_stats still showed a dirty
	 * dying wb of the cgroup */
	uint64_t verify_dirty;
};

/* The counters, each part's of its own doing. */
struct wbg_engine_stats { /* lifecycle.c */
	uint64_t cleanup_cycles, cleanup_failures;
	uint64_t invalid_steps; /* events in a phase that must not see them (handover-phase.h) */
	uint64_t late_jobs; /* jobs of a flush round that had timed out, finishing later: not counted */
};

struct wbg_event_stats { /* lifecycle-event.c */
	uint64_t plans_set_evicted;
	/* the exit recipe's flushes, and their targets by how: its own inodes,
	 * or syncfs for want of a complete inode set */
	uint64_t exit_flushes, exit_targets_inodes, exit_targets_syncfs;
};

struct wbg_plan_stats { /* lifecycle-flush.c */
	uint64_t inode_records_evicted; /* inode records a plan's cgroup had counted that the LRU evicted */
	uint64_t evidence_inodes_added; /* evidence inodes its plan did not hold, flushed all the same */
};

struct wbg_end_stats { /* lifecycle-end.c */
	uint64_t by[_WBG_TRIGGER_MAX][_WBG_OUTCOME_MAX];
	uint64_t flushed_device_bytes;
	struct wbg_hist reaction;       /* trigger (or evidence) -> first flush issued */
	struct wbg_hist flush_duration; /* first flush -> all targets done */
};

struct wbg_stall_stats { /* lifecycle-stall.c: lifecycle_stall()'s results */
	uint64_t started, covered, capped, off;
	uint64_t tenant_capped, out_of_scope; /* ... its tenant's budget; outside [daemon] roots */
	uint64_t retry_full; /* capped stalls the retry FIFO had no room for: re-armed at once */
};

/* A finished handover, as the API reports it. */
struct wbg_recent {
	uint64_t id;
	char *path;
	const char *outcome, *reason;
	char *json; /* the record, as in handovers.jsonl */
};

/* The last WBG_RECENT_MAX finished handovers (lifecycle-waiters.c). */
struct wbg_recent_ring {
	struct wbg_recent v[WBG_RECENT_MAX];
	uint64_t n; /* ever */
};

struct wbg_waiter;

/* The on-evidence watch table (lifecycle-watch.c): it observes each step's
 * output (WATCH, ARM_STALL, UNWATCH) and turns what it sees at its looks
 * into facts. */
struct wbg_watch_table {
	struct wbg_handover **v;
	size_t n, cap;
	uint64_t due; /* its next look */
	struct wbg_watch_stats stats;
	/* its shares: watch.max, watch.max_per_tenant (share.h); its
	 * refusals by reason */
	struct wbg_share share;
	/* evidence flushes node-wide ([flush] evidence_flushes_per_sec), and
	 * a quarter of that per tenant */
	struct wbg_rate evidence_rate;
	struct wbg_rate_bucket evidence_tenant_rate[64];
};

/* API callers waiting for a handover's flush (lifecycle-waiters.c): they
 * observe each step's output (ANSWER) and every handover's end. */
struct wbg_waiters {
	struct wbg_waiter *head;
	unsigned n;
	struct wbg_share share; /* each tenant's share, refusals by reason */
};

/* The handovers in progress and what the reports' merging needs to know of
 * cgroups (lifecycle-active.c). */
struct wbg_active_set {
	void *tree; /* tsearch tree of handovers in progress, by id */
	size_t n;
	void *per_cgroup; /* ... how many per cgroup id: a stall's "covered?" in O(log n) */
	/* cgroups whose going-away a handover recorded at populated 0 (clean,
	 * disabled, a parent, nothing of its own): their removal is no second
	 * record. One entry per tracked cgroup at most (the registry's bound):
	 * it leaves at the removal, or when the cgroup is in use again. */
	void *settled;
	/* cgroup ids whose handover ended lately: the rmdir tracepoint's
	 * report of a removal inotify already handled is no news (one in
	 * progress is known by per_cgroup, however many there are; only the
	 * ended ones need this ring) */
	uint64_t ended_ids[1024];
	unsigned ended_next;
};

/* The stall's budget (lifecycle-stall.c): stall handovers per device, and
 * per tenant on a device, a token bucket each; capped stalls reported again
 * once their time comes (a FIFO), not at each of their next failed
 * flushes. */
struct wbg_stall_budget {
	struct wbg_rate_bucket rate[16], tenant_rate[64];
	struct {
		uint64_t cgroup_id, due;
	} retry[256];
	size_t retry_head, n_retry;
	struct wbg_stall_stats stats;
};

/* The engine (lifecycle.c) holds the parts. A member marked "owner: FILE"
 * is that file's alone: the other files reach it through the owner's
 * functions (lifecycle-internal.h), and tools/lifecycle-parts, a check of
 * the unit suite, fails on any lc->member elsewhere. The unmarked ones are
 * the engine's context every part reads (parameters, world, registry).
 * Each part counts what it does in its own struct; the metrics read them
 * through the owners' lc_*_stats(). */
struct wbg_lifecycle {
	struct wbg_lifecycle_params params;
	struct wbg_lifecycle_world world;
	struct wbg_registry *reg;
	const struct wbg_containers *containers; /* whose cgroups, for the records */
	struct wbg_ids ids; /* owner: lifecycle-active.c. Unique across restarts (pending.h) */
	bool mitigating;

	struct wbg_active_set act; /* owner: lifecycle-active.c */
	struct wbg_handover *in_flight; /* owner: lifecycle.c. FLUSHING: their timeouts */
	/* owner: lifecycle.c. The cleanup and verify batches. */
	struct wbg_handover *cleanup_head, *cleanup_tail, *verify_head, *verify_tail;
	uint64_t cleanup_due; /* owner: lifecycle.c */
	struct wbg_watch_table watch; /* owner: lifecycle-watch.c. on-evidence: the handovers whose dying wbs are watched */
	struct wbg_stall_budget stall; /* owner: lifecycle-stall.c */
	struct wbg_waiters waiters; /* owner: lifecycle-waiters.c. API callers waiting for a flush */
	struct wbg_recent_ring recent; /* owner: lifecycle-waiters.c */

	struct wbg_engine_stats engine_stats; /* owner: lifecycle.c */
	struct wbg_event_stats event_stats; /* owner: lifecycle-event.c */
	struct wbg_plan_stats plan_stats; /* owner: lifecycle-flush.c */
	struct wbg_end_stats end_stats; /* owner: lifecycle-end.c */
};

void lifecycle_init(struct wbg_lifecycle *lc, const struct wbg_lifecycle_params *p, struct wbg_registry *reg,
		    const struct wbg_containers *containers, const struct wbg_lifecycle_world *world);
/* Ids from dir's reservation, above floor (pending_max_id). */
void lifecycle_open_ids(struct wbg_lifecycle *lc, const char *dir, uint64_t floor);
/* Reloaded configuration; the watch table's bound applies to new entries. */
void lifecycle_set_params(struct wbg_lifecycle *lc, const struct wbg_lifecycle_params *p);
void lifecycle_set_mitigating(struct wbg_lifecycle *lc, bool on);
/* Stopping: waiters answered, deferred, watched and flushing handovers
 * recorded interrupted (their pending records kept for the next start,
 * which flushes what they name), the rest as they stand. Then everything
 * is freed. A lifecycle never initialized (zeroed) has nothing to stop. */
void lifecycle_stop(struct wbg_lifecycle *lc);

/* The lifecycle's news. c is the cgroup's registry entry (or a stand-in
 * for one only the rmdir tracepoint saw). Returns the id of the handover
 * it started, 0 if it moved one on or started none. */
uint64_t lifecycle_event(struct wbg_lifecycle *lc, struct wbg_cgroup *c, enum wbg_trigger trigger);
/* In use again before its removal: its handover, if its flush is done, is
 * over. */
void lifecycle_repopulated(struct wbg_lifecycle *lc, struct wbg_cgroup *c);
/* systemd said what its stop job was after all. */
void lifecycle_job_type(struct wbg_lifecycle *lc, struct wbg_cgroup *c, const char *type);
/* A pool job for handovers is done. */
void lifecycle_job_done(struct wbg_lifecycle *lc, const struct flush_job *j);
/* Timeouts, batches, waiters and the watch that are due (ops->schedule
 * said when). */
void lifecycle_tick(struct wbg_lifecycle *lc);
/* Whether the cgroup had a handover: one in progress, or one of the last
 * 1,024 that ended (the rmdir ring's duplicates of inotify's news). */
bool lifecycle_recently_started(const struct wbg_lifecycle *lc, uint64_t cgroup_id);
/* The handover in progress with that id, or NULL. O(log n). */
const struct wbg_handover *lifecycle_find(const struct wbg_lifecycle *lc, uint64_t id);
/* How many handovers are in progress; how many of them are watched. */
size_t lifecycle_n_active(const struct wbg_lifecycle *lc);
size_t lifecycle_n_watched(const struct wbg_lifecycle *lc);
/* How many handovers ended since the start; the bytes written to block
 * devices while their flushes ran. */
uint64_t lifecycle_total(const struct wbg_lifecycle *lc);
uint64_t lifecycle_flushed_device_bytes(const struct wbg_lifecycle *lc);
/* Whether a handover of the cgroup is in progress. O(log n). */
bool lifecycle_cgroup_active(const struct wbg_lifecycle *lc, uint64_t cgroup_id);

/* When what a removed cgroup dirtied (BPF's inode and device records, which
 * say what to flush on evidence) is forgotten: the one decision, for the
 * three moments that may forget it. */
enum wbg_forget_moment {
	WBG_FORGET_REMOVED,   /* the cgroup's removal was seen */
	WBG_FORGET_ENDED,     /* a handover of it ended */
	WBG_FORGET_UNWATCHED, /* its dying wb's watch ended */
};
struct wbg_forget_facts {
	bool active;      /* a handover of it is (still) in progress */
	bool removed;     /* ENDED: the handover saw the removal */
	bool was_watched; /* ENDED: it was watched (its unwatching forgot) */
};
bool handover_forget_dirtied(enum wbg_forget_moment when, struct wbg_forget_facts f);

/* A cgroup's going-away is reported by several sources: inotify (populated
 * 0, its removal, the rescan), systemd (a stop job, a unit stopping), BPF's
 * rmdir tracepoint, an API call. What each report adds is the one decision
 * below, over the facts lifecycle_event() gathers; no source filters its
 * own reports. */
enum wbg_merge {
	WBG_MERGE_DROP,    /* another report covers it, or it is none of wbguard's */
	WBG_MERGE_START,   /* the first report of this going-away: a handover starts */
	WBG_MERGE_MOVE_ON, /* news for the cgroup's handover in progress */
	WBG_MERGE_SETTLED, /* the removal of one whose going-away is recorded (settled): nothing starts */
};
struct wbg_report_facts {
	bool in_scope;  /* a cgroup wbguard hands over (not a scope's ancestor) */
	bool populated; /* processes in it, as the registry last saw */
	bool removed;   /* the registry saw its removal */
	bool tracked;   /* the registry has it: inotify reports its removal */
	bool handover;  /* its going-away's handover is in progress */
	bool recent;    /* a handover of it is active or among the last 1,024 ended */
	bool settled;   /* a handover ended early while it existed: covers its removal */
};
enum wbg_merge handover_merge_report(enum wbg_trigger trigger, struct wbg_report_facts f);

/* on-evidence: BPF saw a live cgroup dirty an inode of a watched dying wb
 * (inode: which, flushed with the rest of the cgroup's own), or a foreign
 * flush to it fail (inode NULL). -ENOENT: not watched. ret_path: its
 * handover's cgroup, for the log. */
int lifecycle_evidence(struct wbg_lifecycle *lc, uint64_t cgroup_id, const struct wbg_inode_key *inode,
		       const char **ret_path);
/* The stall itself: the kernel failed a foreign flush to the dying cgroup
 * cgroup_id (its bdi on bdi_dev), which no handover covers: wbguardd was
 * down at its removal, forgot it, or refused it. A handover (trigger
 * stall) starts: watched like any removal on-evidence, and flushed at once
 * (its own inodes where BPF still has them, else the filesystem on that
 * device, budgeted like any syncfs), as the evidence cap allows. path: its
 * cgroup's, where known; in_scope: false when that path is outside
 * [daemon] roots (counted, and BPF keeps it reported: nothing more).
 * Returns 1 when one started; 0 when one covers it already, it is out of
 * scope or mitigation is off (counted); -EBUSY: that device's rate of
 * them, or its tenant's share of that, is used up (counted; reported again
 * a second later, not at each failed flush). */
int lifecycle_stall(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, dev_t bdi_dev, bool in_scope);
/* The kernel released the cgroup: its wbs are gone with it. */
void lifecycle_released(struct wbg_lifecycle *lc, uint64_t cgroup_id);
/* Whether its dying wb is watched (what it dirtied is needed then). */
bool lifecycle_watching(const struct wbg_lifecycle *lc, uint64_t cgroup_id);

/* A handover for a cgroup already gone whose targets a record names
 * (restart recovery): flushed, then the cleanup, like any removal. */
int lifecycle_recover(struct wbg_lifecycle *lc, uint64_t cgroup_id, const char *path, const dev_t *devs,
		      const bool *bdev, size_t n, uint64_t *ret_id);

/* The API's FlushCgroup: c, if the cgroup is tracked, else path. Answers
 * through ops->reply at once or when the flush ends (at most timeout_usec
 * later: "pending"). A handover on-evidence watches (or defers until its
 * removal) is answered at once, "watched": nothing will be flushed for
 * the caller to wait for. -ENOENT: nothing known of it; -EBUSY: too many
 * waiting. */
int lifecycle_flush_request(struct wbg_lifecycle *lc, struct wbg_cgroup *c, const char *path, uint64_t timeout_usec,
			    void *call);
/* Callers match() picks wait for nothing any more (their connection
 * closed). Returns how many went. */
unsigned lifecycle_drop_waiters(struct wbg_lifecycle *lc, bool (*match)(void *call, const void *data),
				const void *data);

/* The recent records, oldest first: from lifecycle_recent_first() (the
 * last limit of them; 0: all kept) while lifecycle_recent_at() has one. */
uint64_t lifecycle_recent_first(const struct wbg_lifecycle *lc, size_t limit);
const struct wbg_recent *lifecycle_recent_at(const struct wbg_lifecycle *lc, uint64_t i);
/* Its metric families (wbguard_handovers_total, wbguard_dying_*...). */
void lifecycle_metrics(FILE *f, const struct wbg_lifecycle *lc);
