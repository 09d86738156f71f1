/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the BPF programs and their user-space readers. */
#pragma once

#ifndef __VMLINUX_H__ /* user space; BPF gets the types from vmlinux.h */
#include <linux/types.h>
#endif

#define WBG_WBID_KEYS_MAX 4096 /* LRU bound of the per-cgroup result series */
#define WBG_INFLIGHT_MAX 1024  /* tasks inside cgroup_writeback_by_id at once */
#define WBG_DEVS_MAX 16384     /* (cgroup, device) pairs */
#define WBG_INODES_MAX 65536   /* (cgroup, inode) pairs */
#define WBG_CGROUPS_MAX 16384  /* cgroups with an inode count */

/* What the target memcg of a foreign flush was when the kernel looked its wb
 * up. UNKNOWN: the lookup was not reached (no such bdi or css). */
enum wbg_target_state {
	WBG_TARGET_UNKNOWN = 0,
	WBG_TARGET_LIVE = 1,
	WBG_TARGET_DYING = 2,
};

/* Key of the cgroup_writeback_by_id() result counters. cgroup_id is the
 * target memcg's cgroup id (its cgroupfs inode number), 0 when unknown. */
struct wbg_wbid_key {
	__u64 cgroup_id;
	__s32 ret;
	__u32 target_state;
};

/* What a cgroup dirtied: a filesystem (by its superblock's device) or the
 * page cache of a block device itself (ext4 metadata, raw writes). */
enum wbg_dev_kind {
	WBG_DEV_FS = 0,
	WBG_DEV_BDEV = 1,
};

struct wbg_dev_key {
	__u64 cgroup_id;
	__u32 dev; /* kernel dev_t encoding: major << 20 | minor */
	__u32 kind;
};

struct wbg_dev_val {
	__u64 folios;  /* folios dirtied */
	__u64 last_ns; /* when last dirtied (bpf_ktime_get_ns) */
};

struct wbg_inode_key {
	__u64 cgroup_id;
	__u64 ino;
	__u32 dev;
	__u32 gen;
};

/* Per cgroup: how many inodes were recorded, and whether the per-cgroup
 * bound was hit (then the set is incomplete and only syncfs will do). */
struct wbg_cgroup_inodes {
	__u32 count;
	__u32 overflow;
};

#define WBG_RMDIR_PATH_MAX 256

/* A cgroup removed (tracepoint cgroup:cgroup_rmdir), for removals too quick
 * for inotify to tie to a cgroup id. */
struct wbg_rmdir_event {
	__u64 cgroup_id;
	__u32 level;
	__u32 root;     /* hierarchy id: the default (v2) hierarchy is 0 */
	char path[WBG_RMDIR_PATH_MAX];
};
