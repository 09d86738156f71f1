/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * At start, after the cgroupfs watch exists: what a previous wbguardd (or
 * no wbguardd at all) left dirty. Handovers that were in flight when it was
 * killed (pending.h) are flushed again; then dying wbs that still have
 * dirty IO and that no record named (wb_stats, 6.10+: a cgroup inode no
 * longer in cgroupfs is a dying cgroup's) get a handover too, as
 * "(removed while not watching)". Both are trigger "recovered".
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct wbg_lifecycle;
struct wbg_named_bdis;

/* The records in state_dir, each redone and dropped; the cgroup ids they
 * named go to *ret_covered (sorted, malloc'ed). */
int recover_pending(struct wbg_lifecycle *lc, const char *state_dir, uint64_t **ret_covered, size_t *ret_n);
/* debugfs: where bdi/<bdi>/wb_stats are; named: btrfs' bdis (NULL: device
 * numbers only); cgroup_root, max_depth: the live cgroups. covered: ids
 * recover_pending() already redid. */
int recover_dying(struct wbg_lifecycle *lc, const char *debugfs, const struct wbg_named_bdis *named,
		  const char *cgroup_root, unsigned max_depth, const uint64_t *covered, size_t n_covered);
