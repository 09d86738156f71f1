/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The flush worker pool. Blocking writeback runs here, never on the event
 * loop. Work is per target (a filesystem or a block device): at most one
 * job runs per target, and a new request for a target that already has a
 * waiting job joins it (its inodes and waiters are merged), so fifty
 * removals on one filesystem cost at most two syncfs rounds (only a
 * waiting job that is full queues another behind it: below). The
 * number of threads caps global concurrency. Finished jobs are handed back to
 * the event loop through an eventfd.
 *
 * A flush can hang for good (an NFS server gone, a FUSE daemon stopped, a
 * suspended device): a worker still inside one after the timeout is given
 * up on (stuck) and a new thread takes its place, up to FLUSH_STUCK_MAX at
 * once, so that other filesystems keep flushing. A merged job is bounded:
 * past FLUSH_JOB_INODES_MAX inodes it becomes a syncfs, past
 * FLUSH_JOB_WAITERS_MAX waiters the next waits behind it, up to
 * FLUSH_SLOT_OVERFLOW_MAX of them; past those a submit is refused with
 * -EBUSY.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "flush-ops.h"

enum flush_kind { FLUSH_FS, FLUSH_BDEV };

#define FLUSH_STUCK_MAX 16
#define FLUSH_JOB_INODES_MAX 65536
#define FLUSH_JOB_WAITERS_MAX 4096
#define FLUSH_SLOT_OVERFLOW_MAX 15 /* full waiting jobs queued behind one: 65,536 waiters a target */

/* What a job does with its inodes, from least to most: start their
 * writeback (EXPIRY: a live pod's dirty data that is due, like the kernel's
 * own expiry; EVIDENCE: a removed cgroup's inodes a replacement writes to,
 * the writer waiting for the pages, not for us), write them and wait (EXIT:
 * the cgroup's own data as it empties, held by the per-device byte budget),
 * or fsync them and syncfs (HANDOVER: a removed cgroup's data, all of it,
 * before its wb dies). Without an inode set, or with handles refused, each
 * falls back to syncfs. A merged job does the most its parts asked; a
 * HANDOVER covers the others. */
enum flush_purpose { FLUSH_FOR_HANDOVER, FLUSH_FOR_EXPIRY, FLUSH_FOR_EVIDENCE, FLUSH_FOR_EXIT };

struct flush_job {
	struct flush_job *next;
	/* what */
	dev_t dev;
	enum flush_kind kind;
	char fstype[32];
	char mount[4096];        /* mount point; for FLUSH_BDEV the device node */
	enum flush_purpose purpose;
	unsigned passes;         /* syncfs passes */
	bool use_inodes;         /* fsync these inodes instead of syncfs */
	struct wbg_inode_key *inodes;
	size_t n_inodes, cap_inodes;
	/* who waits: handover ids, and cgroup ids of pods' expiry flushes */
	uint64_t *waiters;
	size_t n_waiters;
	uint64_t *pods;
	size_t n_pods;
	/* results, filled by the worker */
	uint64_t queued_usec, started_usec, finished_usec;
	int result;
	bool fell_back;          /* inodes were refused (or none given); syncfs was done instead */
	bool handles_refused;    /* ... because opening by handle was refused (not for want of a set) */
	struct wbg_flush_stats stats;
	uint64_t device_bytes;   /* written to the device while the job ran */
	bool stuck;              /* still running past the timeout: its worker was replaced */
	uint64_t held_usec;      /* when the budget first held it back (0: never) */
};

/* Per target (a filesystem or a block device), since start: what the
 * budget bounds. */
struct flush_target_stats {
	uint64_t jobs, syncfs_calls, device_bytes, budget_waits;
	uint64_t exit_jobs, exit_bytes; /* EXIT jobs, and what they wrote to the device */
};

/* Pool counters, read on the event loop. */
struct flush_pool_stats {
	unsigned busy, stuck;
	uint64_t stuck_total, refused_busy, inodes_capped;
	uint64_t overflows; /* jobs queued behind a full waiting one (FLUSH_JOB_WAITERS_MAX) */
	uint64_t budget_waits, budget_wait_usec, jobs_started;
	uint64_t handle_fallbacks; /* jobs whose handles were refused: a syncfs instead */
	uint64_t inodes_skipped;   /* recorded inodes that were no regular files: never opened */
	bool handles_available;    /* the start's probe (flush_pool_set_handles) */
};

struct flush_pool;

int flush_pool_new(unsigned threads, const char *sysfs_dev_block, struct flush_pool **ret);
/* Tests: run jobs with this instead of the real flush. */
void flush_pool_set_runner(struct flush_pool *p, void (*run)(struct flush_job *j, void *userdata), void *userdata);
/* Marks jobs running for longer than timeout_usec stuck and starts a thread
 * for each (within FLUSH_STUCK_MAX). Returns how many it marked. */
unsigned flush_pool_reap_stuck(struct flush_pool *p, uint64_t timeout_usec);
/* The budget: a job for a target starts at least usec after the previous
 * one for it started (0: at once); requests meanwhile merge into the
 * waiting job. Jobs held back are counted (budget_waits, and for how long). */
void flush_pool_set_interval(struct flush_pool *p, uint64_t usec);
/* The exit recipe's budget: after an EXIT job wrote B bytes to its device,
 * the next EXIT job there starts B / bytes_per_sec later (0: at once). */
void flush_pool_set_exit_rate(struct flush_pool *p, uint64_t bytes_per_sec);
/* Whether files can be opened by handle here (flush_probe_handles() at
 * start): when not, every job that would write a cgroup's own inodes falls
 * back to syncfs, and is held by the budget like one. A target whose
 * handles are refused at run time is held from then on. */
void flush_pool_set_handles(struct flush_pool *p, bool available);
void flush_pool_stats(struct flush_pool *p, struct flush_pool_stats *ret);
/* Each target's counters, under the pool's lock (cb must not call the pool). */
int flush_pool_foreach_target(struct flush_pool *p,
			      int (*cb)(dev_t dev, enum flush_kind kind, const struct flush_target_stats *st, void *userdata),
			      void *userdata);
void flush_pool_free(struct flush_pool *p);
/* Readable when jobs have finished. */
int flush_pool_fd(const struct flush_pool *p);
/* Takes job (merging it into a waiting one for the same target when there
 * is one; then *job is freed). */
int flush_pool_submit(struct flush_pool *p, struct flush_job *job);
/* Finished jobs, oldest first; the caller frees them with flush_job_free. */
struct flush_job *flush_pool_take_done(struct flush_pool *p);

struct flush_job *flush_job_new(dev_t dev, enum flush_kind kind, const char *fstype, const char *mount);
int flush_job_add_waiter(struct flush_job *j, uint64_t handover_id);
int flush_job_add_pod(struct flush_job *j, uint64_t cgroup_id);
int flush_job_add_inodes(struct flush_job *j, const struct wbg_inode_key *v, size_t n);
void flush_job_free(struct flush_job *j);
/* j's request into into (same target): its waiters and pods, the most its
 * purpose asks, its inodes or the whole filesystem. -EBUSY: into has too many
 * waiters. ret_capped: the inode list hit FLUSH_JOB_INODES_MAX and became
 * the whole filesystem. */
int flush_job_merge(struct flush_job *into, const struct flush_job *j, bool *ret_capped);
/* Its metric families (wbguard_flush_*): workers, jobs, the budget. */
void flush_pool_metrics(FILE *f, struct flush_pool *p);
