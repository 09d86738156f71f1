/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The planner: what to flush for a cgroup going away. Targets from what BPF
 * recorded the cgroup dirtied (filesystems, block devices, and its inodes
 * where the set is complete), else what its mount namespace showed, else
 * every filesystem with writeback; excluded filesystem types left out.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "flush-pool.h"
#include "plan-params.h"
#include "wbg-kernel.h"

struct blockdevs;
struct wbg_bpf;

/* syncfs passes for fstype. */
unsigned plan_passes_for(const struct wbg_plan_params *pp, const char *fstype);
/* Whether exclude_fstypes names it (a glob): its syncfs can hang for as
 * long as a server or a FUSE daemon takes. */
bool plan_fstype_excluded(const struct wbg_plan_params *pp, const char *fstype);

struct wbg_plan_target {
	dev_t dev;
	enum flush_kind kind;
	char fstype[32];
	char mount[4096];
	unsigned passes;
	bool use_inodes;
	struct wbg_inode_key *inodes;
	size_t n_inodes;
};

struct wbg_plan {
	struct wbg_plan_target *t;
	size_t n;
	const char *source; /* "bpf" or "mounts" */
	bool inodes_incomplete;
	size_t inodes_evicted;  /* inode records BPF counted for it that its LRU evicted */
	unsigned n_excluded;    /* filesystems left out: [flush] exclude_fstypes */
	bool own_set_missing;   /* BPF has no dirtied-device set for the cgroup itself */
	bool set_maybe_evicted; /* ... and its LRU may have evicted it */
};

/* What to flush for a cgroup. mounts: our mount table; bdevs: device
 * nodes by number; bpf may be NULL. */
int handover_plan(uint64_t cgroup_id, const struct wbg_plan_params *pp, const struct wbg_mounts *mounts,
		  const struct blockdevs *bdevs, const struct wbg_bpf *bpf, struct wbg_plan *ret);
/* Every filesystem with writeback in the mount table (no BPF, or a set the
 * BPF LRU may have evicted), added to p. */
int handover_plan_mounts(const struct wbg_plan_params *pp, const struct wbg_mounts *mounts, struct wbg_plan *p);
/* The targets a handover interrupted by a restart had recorded
 * (pending.h): filesystems by device, block devices by node. */
int handover_plan_recorded(const struct wbg_plan_params *pp, const struct wbg_mounts *mounts, const struct blockdevs *bdevs,
			   const dev_t *devs, const bool *bdev, size_t n, struct wbg_plan *ret);
/* Without BPF, when the cgroup's processes were seen: only the filesystems
 * their mount namespace had (ns_devs), else every one. */
int handover_plan_devs(const struct wbg_plan_params *pp, const struct wbg_mounts *mounts, const dev_t *ns_devs,
		       size_t n_ns_devs, struct wbg_plan *ret);
/* The filesystems with writeback that a process's mountinfo shows. */
int mountns_devs(const char *proc, pid_t pid, dev_t **ret, unsigned *ret_n);
void plan_free(struct wbg_plan *p);
/* The inode the evidence named (kernel dev_t encoding, as BPF records it)
 * into the plan's per-inode target on its filesystem, if not there yet: a
 * record the LRU lost is still written. Returns 1 if added. A syncfs
 * target covers it already; with no target on its device, 0. */
int plan_add_inode(struct wbg_plan *p, const struct wbg_inode_key *k);
/* One target as a job in the pool: for a handover (id = the handover's) or a
 * pod's expiry (id = its cgroup's). */
int plan_target_submit(struct flush_pool *pool, const struct wbg_plan_target *t, enum flush_purpose purpose, uint64_t id);
/* Whether a filesystem type has writeback at all (tmpfs, proc... do not). */
bool fstype_has_writeback(const char *fstype);

