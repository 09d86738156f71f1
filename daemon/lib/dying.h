/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Flushing on evidence ([flush] mode = on-evidence): the removed cgroups
 * whose dying wbs may still hold dirty inodes, and what is done for each.
 *
 * A removal costs no data I/O. The kernel keeps writing a dying wb back on
 * its own (its delayed work and the periodic old-data flush still visit it),
 * so within about an expiry it has no dirty IO left; then one scratch memcg
 * cycle (scratch.h) makes the kernel's offline cleanup move its inodes to a
 * live wb. Only when a live cgroup dirties an inode that is still on the
 * dying wb (the stall's first sign: BPF on writeback:track_foreign_dirty,
 * one event per arming) is the removed cgroup's data flushed, at once, and
 * the cleanup re-run. A wb that is still dirty after that is watched again
 * (re-armed); a second flush waits reflush_usec after the first. Where
 * wb_stats cannot say whether it is still dirty (before 6.10), a flushed
 * cgroup is watched again for the stall itself until DYING_QUIET_USEC pass
 * without it.
 *
 * The decisions live here; the world (BPF, the flush pool, the scratch
 * cycle, wb_stats, the handover that ends) is reached through dying_ops, so
 * unit tests drive every transition with fakes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How often the table is looked at while it holds entries: one read of
 * wb_stats per bdi, and at most one cleanup cycle. */
#define DYING_TICK_USEC (1000ULL * 1000)
/* Without wb_stats (before 6.10), how long a flushed cgroup must go without
 * the stall (an -ENOENT foreign flush) before its watch ends: a stalled
 * writer's flushes fail every few seconds. */
#define DYING_QUIET_USEC (10ULL * 1000 * 1000)

enum dying_state {
	DYING_WATCHING, /* armed; waiting for it to drain, or for evidence */
	DYING_FLUSHING, /* its flush is running */
	DYING_CLEANUP,  /* drained or flushed: the next tick runs the cleanup */
	DYING_VERIFY,   /* cleanup done: the next tick checks the wb */
};

enum dying_end {
	DYING_END_DRAINED,   /* clean without a flush of ours */
	DYING_END_FLUSHED,   /* flushed (on evidence or at max_age), then clean */
	DYING_END_UNVERIFIED, /* no wb_stats: cleanup run after drain_after, not checked */
	DYING_END_DIRTY,     /* still dirty at max_age after a flush: given up */
	DYING_END_DROPPED,   /* released by the kernel, or wbguardd stopping */
};

struct dying_result {
	enum dying_end end;
	unsigned evidence;  /* evidence events */
	unsigned flushes;   /* flushes started */
	bool flush_failed;  /* one of them failed */
	bool cleanup_done;  /* a cleanup cycle ran for it */
	bool expired;       /* a flush was started because max_age passed */
	uint64_t t_evidence; /* the first evidence (CLOCK_MONOTONIC usec; 0 none) */
	uint64_t t_cleanup;
	int verify; /* after the cleanup, by wb_stats: 1 clean, 0 still dirty, -1 not known */
};

struct dying_ops {
	/* BPF: send one evidence event at the next foreign dirtying or
	 * -ENOENT foreign flush; stall_only (after a flush): at the next
	 * -ENOENT only, since a writer that stayed on the wb is no news. */
	int (*arm)(void *userdata, uint64_t cgroup_id, bool stall_only);
	void (*disarm)(void *userdata, uint64_t cgroup_id);
	/* Start writing the cgroup's data; dying_flush_done() follows (maybe
	 * from inside this call). evidence: for a writer on its inodes (their
	 * pages suffice); else (max_age) all of it, for the cleanup. A
	 * negative return: not started. */
	int (*flush)(void *userdata, uint64_t cgroup_id, void *cookie, bool evidence);
	/* One cleanup cycle (the kernel re-runs its offline-wb cleanup). */
	int (*cleanup)(void *userdata);
	/* The cgroup inodes with a wb with dirty IO, sorted (malloc'ed);
	 * -ENOENT when the kernel cannot say (no wb_stats). */
	int (*dirty_cgroups)(void *userdata, uint64_t **ret, size_t *ret_n);
	/* The entry is over (and freed): its handover ends. */
	void (*done)(void *userdata, void *cookie, const struct dying_result *res);
};

struct dying_params {
	size_t max;                /* entries; dying_add() refuses more (-ENOSPC) */
	uint64_t drain_after_usec; /* without wb_stats: when a wb is taken as drained */
	uint64_t max_age_usec;     /* not drained by then: flushed; still dirty after: given up */
	uint64_t reflush_usec;     /* at least this between two flushes of one cgroup */
};

struct dying_stats {
	uint64_t added, refused_full, evidence, evidence_ignored, flushes, flush_failures, expired, cleanups,
		cleanup_failures, ended[DYING_END_DROPPED + 1];
};

struct dying_entry;

struct dying_watch {
	struct dying_params params;
	const struct dying_ops *ops;
	void *userdata;
	struct dying_entry **v;
	size_t n, cap;
	struct dying_stats stats;
};

void dying_init(struct dying_watch *w, const struct dying_params *p, const struct dying_ops *ops, void *userdata);
/* Ends every entry (DYING_END_DROPPED) and frees the table. */
void dying_done(struct dying_watch *w);
/* A removed cgroup with dirty data: watch it. -ENOSPC when the table is
 * full (counted; the caller flushes eagerly), -EEXIST when watched. */
int dying_add(struct dying_watch *w, uint64_t cgroup_id, void *cookie, uint64_t now);
/* Evidence for a dying cgroup: flushes it unless a flush runs or ran less
 * than reflush_usec ago: then 1, and the tick after reflush_usec does.
 * -ENOENT: not watched. */
int dying_evidence(struct dying_watch *w, uint64_t cgroup_id, uint64_t now);
/* Its cleanup runs with the next tick: the caller ticks soon. */
void dying_flush_done(struct dying_watch *w, uint64_t cgroup_id, bool ok, uint64_t now);
/* Released by the kernel: its wbs are gone with it (so none is dirty: the
 * result's verify is 1). */
void dying_release(struct dying_watch *w, uint64_t cgroup_id);
/* Drain checks, cleanups, verifications, max_age flushes. Returns when the
 * next tick is due (0: nothing is watched). */
uint64_t dying_tick(struct dying_watch *w, uint64_t now);
size_t dying_count(const struct dying_watch *w);
bool dying_has(const struct dying_watch *w, uint64_t cgroup_id);
const char *dying_end_to_string(enum dying_end e);
