/* SPDX-License-Identifier: GPL-2.0-or-later */
/* debugfs bdi/<bdi>/wb_stats (6.10+): every wb on bdi->wb_list, dying ones
 * included. A dying wb of a removed cgroup that still has dirty IO is the
 * one the kernel's offline cleanup skips. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "named-bdis.h"

struct wbg_wb_stat {
	uint64_t cg_ino;
	uint64_t writeback_kb, reclaimable_kb;
	uint64_t b_dirty, b_io, b_more_io, b_dirty_time;
	uint64_t state;
};

int wbstats_parse(const char *text, struct wbg_wb_stat **ret, size_t *ret_n);
bool wb_stat_has_dirty_io(const struct wbg_wb_stat *s);
/* Over every bdi under debugfs: 1 when no wb of the cgroup has dirty IO, 0
 * when one does, -ENOENT when the kernel has no wb_stats (before 6.10 or
 * debugfs not mounted). */
int wbstats_cgroup_clean(const char *debugfs, uint64_t cg_ino);
/* The same for a batch, from one read of each bdi's wb_stats: the cgroup
 * inodes with a wb with dirty IO, and those with a wb listed at all, each
 * sorted (malloc'ed). A dying wb stays on bdi->wb_list until its last
 * reference goes, and every inode attached to it holds one: listed means
 * the kernel has not moved all of the removed cgroup's inodes to a live wb
 * yet; gone from the list, it has (or they were evicted). */
struct wbg_wb_census {
	uint64_t *dirty, *listed;
	size_t n_dirty, n_listed;
};
int wbstats_census(const char *debugfs, struct wbg_wb_census *ret);
void wbstats_census_done(struct wbg_wb_census *c);
bool wbstats_set_has(const uint64_t *set, size_t n, uint64_t cg_ino);

/* A wb, and the device its bdi is named by (has_dev false when the name is
 * neither a device number nor in the table of named bdis); dirty_bytes:
 * its WbReclaimable and WbWriteback. */
struct wbg_dirty_wb {
	uint64_t cg_ino;
	bool dirty;
	uint64_t dirty_bytes;
	bool has_dev;
	unsigned major, minor;
};
/* A bdi whose wb_stats cannot be read (too large, unparsable) fails the
 * whole read (counted in wbstats_read_failures): unknown, never drained.
 * all: every wb; otherwise those with dirty IO (wbstats_dirty_wbs). */
int wbstats_wbs(const char *debugfs, const struct wbg_named_bdis *named, bool all, struct wbg_dirty_wb **ret,
		size_t *ret_n);
int wbstats_dirty_wbs(const char *debugfs, const struct wbg_named_bdis *named, struct wbg_dirty_wb **ret,
		      size_t *ret_n);
extern uint64_t wbstats_read_failures;
