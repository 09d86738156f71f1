/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the BPF programs and their user-space readers. */
#pragma once

#define WBG_WBID_KEYS_MAX 4096 /* LRU bound of the per-cgroup result series */
#define WBG_INFLIGHT_MAX 1024  /* tasks inside cgroup_writeback_by_id at once */

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
