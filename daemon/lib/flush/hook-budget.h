/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The OCI hook's daemonless fallback under the same per-filesystem budget
 * as wbguardd's flushes ([flush] fs_interval_sec's default: one syncfs of
 * a filesystem a second), kept across the hook's processes in one small
 * file in the run directory: with wbguardd down, a tenant that churns
 * containers cannot make every exit a syncfs of the node's filesystems.
 *
 * The file is a fixed array (HOOK_BUDGET_SLOTS filesystems, the least
 * recently flushed making room once its interval is over, and three
 * counters), read and written under
 * an OFD lock taken within a deadline; whatever goes wrong (no lock in
 * time, a file that is not ours) means no syncfs, never a wait.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define HOOK_BUDGET_FILE "hook-budget"
#define HOOK_BUDGET_SLOTS 64
#define HOOK_BUDGET_INTERVAL_USEC (1000ULL * 1000)

struct hook_budget_counts {
	uint64_t taken, refused;
	uint64_t full; /* refused: every slot's filesystem flushed within the interval */
};

/* Whether the filesystem on dev may be flushed now (now: CLOCK_MONOTONIC
 * microseconds, shared by every process on the node): 1, and its time is
 * noted; 0, one was flushed less than interval ago, or every slot's was
 * (counted as full). dev is the filesystem a syncfs writes: an overlay's
 * upper one (mountinfo_overlay_upper_dev()), never the overlay's own. < 0: the file
 * could not be used (-ETIMEDOUT: its lock not had by lock_deadline): do
 * not flush. dir: the run directory (made if missing). */
int hook_budget_take(const char *dir, dev_t dev, uint64_t now, uint64_t interval, uint64_t lock_deadline);
/* Its counters, for wbguardd's metrics and doctor: a read under no lock
 * (they only grow; a torn read is one scrape's). -ENOENT: no fallback yet. */
int hook_budget_counts(const char *dir, struct hook_budget_counts *ret);
