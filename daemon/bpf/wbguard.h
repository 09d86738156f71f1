/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the BPF programs and their user-space readers. */
#pragma once

#ifndef __VMLINUX_H__ /* user space; BPF gets the types from vmlinux.h */
#include <linux/types.h>
#endif

#define WBG_WBID_CGROUPS_MAX 4096 /* LRU bound of the per-cgroup result series */
#define WBG_INFLIGHT_MAX 1024  /* tasks inside cgroup_writeback_by_id at once */
#define WBG_DIRTIED_CGROUPS_MAX 32768 /* cgroups with a dirtied-device set: 3x issue 7's 10,000 ([bpf] dirtied_cgroups) */
#define WBG_DEVS_PER_CGROUP 4  /* devices per set; more sets its overflow flag */
#define WBG_INODES_MAX 65536   /* (cgroup, inode) pairs */
#define WBG_CGROUPS_MAX 32768  /* cgroups with an inode count (a hash: deleted at release) */
#define WBG_TENANT_CGROUPS_MAX 65536 /* cgroup -> tenant, set by user space for tracked cgroups */
#define WBG_TENANTS_MAX 8192   /* tenants with an inode-record count (LRU) */
#define WBG_STATS_CGROUPS_MAX 4096 /* LRU bound of the per-cgroup path series */

/* The inode records' pool (share.h's floors and pool): what giving back n
 * of a tenant's held records gives back to the pool, its part above the
 * floor before less its part after. BPF's release and user space's forget
 * both give back by it. */
static inline __u64 wbg_pooled_part(__u64 held, __u64 n, __u64 floor)
{
	__u64 after = held > n ? held - n : 0;

	return (held > floor ? held - floor : 0) - (after > floor ? after - floor : 0);
}

/* What the target memcg of a foreign flush was when the kernel looked its wb
 * up. UNKNOWN: the lookup was not reached (no such bdi or css). */
enum wbg_target_state {
	WBG_TARGET_UNKNOWN = 0,
	WBG_TARGET_LIVE = 1,
	WBG_TARGET_DYING = 2,
};

/* Results of cgroup_writeback_by_id(), as the totals class them. */
enum wbg_wbid_result {
	WBG_WBID_OK = 0,
	WBG_WBID_ENOENT = 1,
	WBG_WBID_OTHER = 2,
	_WBG_WBID_RESULT_MAX,
};

/* Per target cgroup (keyed by the target memcg's cgroup id, its cgroupfs
 * inode number; 0 when unknown): its foreign flushes by result and by the
 * target's state. One entry per cgroup, so that dropping a cgroup's series
 * is one delete, not a walk of every cgroup's. */
struct wbg_wbid_counts {
	__u64 n[_WBG_WBID_RESULT_MAX][3]; /* [result][enum wbg_target_state] */
};

/* What a cgroup dirtied: a filesystem (by its superblock's device) or the
 * page cache of a block device itself (ext4 metadata, raw writes). */
enum wbg_dev_kind {
	WBG_DEV_FS = 0,
	WBG_DEV_BDEV = 1,
};

/* One device a cgroup dirtied. tag: WBG_DEV_TAG(kind, dev), 0 while the
 * slot is free (claimed with a compare-and-swap). */
struct wbg_dev_slot {
	__u64 tag;
	__u64 dirtied; /* times one of its inodes went dirty or moved to its wb */
	__u64 last_ns; /* when last dirtied (bpf_ktime_get_ns) */
};

#define WBG_DEV_TAG(kind, dev) (1ULL << 63 | (__u64)(kind) << 32 | (__u32)(dev))
#define WBG_DEV_TAG_KIND(tag) ((__u32)((tag) >> 32) & 1)
#define WBG_DEV_TAG_DEV(tag) ((__u32)(tag)) /* kernel dev_t encoding: major << 20 | minor */

/* What one cgroup dirtied, keyed by its cgroup id: a handover's plan is one
 * lookup and its end one delete, however many cgroups the node has. A
 * cgroup that dirtied more devices than the slots sets overflow, and its
 * plan adds every filesystem. */
struct wbg_cgroup_devs {
	struct wbg_dev_slot slot[WBG_DEVS_PER_CGROUP];
	__u64 overflow;
};

struct wbg_inode_key {
	__u64 cgroup_id;
	__u64 ino;
	__u32 dev;
	__u32 gen;
};

/* The idx-th inode recorded for a cgroup: user space reads a cgroup's
 * inodes as slots 0..count-1, O(its inodes), never a scan of the whole
 * dirtied_inodes map. */
struct wbg_slot_key {
	__u64 cgroup_id;
	__u32 idx;
	__u32 pad;
};

/* Per cgroup: how many inodes were recorded, and whether the per-cgroup
 * bound or its tenant's share was hit (then the set is incomplete and only
 * syncfs will do); the tenant whose share the records count against (the
 * tenant root's cgroup id, 0 for a cgroup user space does not track). */
struct wbg_cgroup_inodes {
	__u32 count;
	__u32 overflow;
	__u64 tenant;
};

/* Exact node-wide counters (a per-CPU array, summed by the reader). The
 * per-cgroup series beside them are LRU-bounded; these never lose counts. */
enum wbg_total {
	/* cgroup_writeback_by_id() results: WBG_T_WBID + result * 3 + target
	 * state, result 0 = ok, 1 = -ENOENT, 2 = other */
	WBG_T_WBID = 0,
	WBG_T_LOOKUP_DYING_FOUND = 9, /* wb_get_lookup_dying() returned a wb */
	WBG_T_LOOKUP_DYING_NONE,      /* ... returned NULL */
	WBG_T_BDEV_FLUSH,             /* bdev_flush_by_dev / bdev_writeback_by_dev */
	WBG_T_FRN_WORK,               /* memcg_bdev_frn_flusher work items run */
	WBG_T_FRN_WORK_NS,            /* ... and their time */
	WBG_T_FLUSH_FOREIGN_WB,       /* writeback:flush_foreign for a cgroup wb */
	WBG_T_FLUSH_FOREIGN_BDEV,     /* ... for a block device (dev != 0) */
	WBG_T_FOREIGN_DIRTY_WB,       /* writeback:track_foreign_dirty, a file's folio */
	WBG_T_FOREIGN_DIRTY_BDEV,     /* ... a block device's, on the separate bdev flush's path (dev != 0) */
	WBG_T_FOREIGN_DIRTY_BDEV_SHARED, /* ... a block device's, on the owner-wb path */
	WBG_T_BDP_PAUSES,             /* balance_dirty_pages() sleeps */
	WBG_T_BDP_PAUSE_MS,           /* ... their length in ms, as traced */
	WBG_T_SWITCHES,               /* writeback:inode_switch_wbs */
	WBG_T_LIFE_LOST,              /* removals/releases the full ring buffer dropped */
	WBG_T_DEVSET_INSERTS,         /* cgroup_devs entries created (user space counts its deletes) */
	WBG_T_STALL_EVENTS,           /* WBG_RING_STALL events sent */
	WBG_T_STALL_REPEATS,          /* -ENOENT for a cgroup already reported, only counted */
	WBG_T_INODES_TENANT_FULL,     /* inode records refused: the tenant's share was full */
	WBG_T_INODES_CGROUPS_FULL,    /* ... the per-cgroup count table was full */
	WBG_T_SPECIAL_INODES,         /* dirtied inodes that were no regular files: not recorded */
	WBG_T_INODES_POOL_FULL,       /* inode records refused: above the tenant's floor, the pool taken */
	WBG_T_INODES_UNTRACKED,       /* ... the cgroup untracked (no tenant entry): no count entry made */
	_WBG_TOTAL_MAX,
};

/* Per cgroup (LRU): the symptom, and wb switch storms. */
struct wbg_cgroup_stats {
	__u64 pauses;        /* balance_dirty_pages() sleeps of its writers */
	__u64 pause_ms;      /* ... summed */
	__u64 switches_from; /* inodes switched away from its wb */
};

#define WBG_RING_PATH_MAX 1024 /* covers kubelet's paths (about 200 bytes) four times over */
#define WBG_RING_BDI_MAX 64    /* a bdi's name: "MAJOR:MINOR", or a driver's short name */

enum wbg_ring_kind {
	WBG_RING_RMDIR = 0,   /* rmdir: the cgroup is dying */
	WBG_RING_RELEASE = 1, /* released: gone, every css of it freed */
	WBG_RING_DIRTY = 2,   /* a watched pod dirtied a page (its expiry clock starts) */
	WBG_RING_EVIDENCE = 3, /* a live cgroup dirtied an inode still on a watched dying wb */
	WBG_RING_STALL = 4,    /* a foreign flush to a dying cgroup nothing watches got -ENOENT */
};

/* The stall itself, for dying cgroups wbguardd has no handover for (it was
 * down at their removal, forgot them, or refused them): the first -ENOENT
 * foreign flush to each sends one WBG_RING_STALL event (its stall.bdi: the
 * bdi's name, "MAJOR:MINOR" for a block device); later ones for the same
 * cgroup only count, until user space forgets it (its handover ended). */
#define WBG_STALL_REPORTED_MAX 4096

/* Per-pod expiry: user space arms a pod's cgroup; its next dirtying fires
 * one WBG_RING_DIRTY event and disarms it. */
#define WBG_EXPIRY_PODS_MAX 4096
enum wbg_expiry_watch {
	WBG_EXPIRY_ARMED = 1,
	WBG_EXPIRY_FIRED = 2,
};

/* One event on the event ring, of any enum wbg_ring_kind: a cgroup removed
 * (tracepoint cgroup:cgroup_rmdir, for removals too quick for inotify to tie
 * to a cgroup id) or released, a watched pod's dirtying, the evidence, the
 * stall. A head every kind fills, then its kind's part: the BPF side
 * reserves only the head and that part (WBG_RING_EVENT_SIZE), so a
 * dirtying or an evidence event takes tens of bytes of the ring, not a
 * removal's path. */
struct wbg_ring_event {
	__u64 cgroup_id; /* EVIDENCE: the dying wb's cgroup */
	__u32 kind;      /* enum wbg_ring_kind */
	__u32 level;     /* RMDIR, RELEASE: the cgroup's; EVIDENCE: its sign, 0 a dirtying, 1 -ENOENT */
	__u32 root;      /* hierarchy id: the default (v2) hierarchy is 0 */
	__u32 pad;
	union {
		struct {
			__u32 dev;     /* the inode's superblock (kernel dev_t encoding) */
			__u32 gen;     /* the inode's generation (its file handle has it) */
			__u64 ino;     /* the inode; 0 for the -ENOENT sign */
			__u64 dirtier; /* the cgroup of the task that dirtied it */
		} evidence;            /* EVIDENCE */
		struct {
			char path[WBG_RING_PATH_MAX];
		} removal;             /* RMDIR, RELEASE */
		struct {
			char bdi[WBG_RING_BDI_MAX]; /* the bdi's name: "MAJOR:MINOR" for a block device */
		} stall;               /* STALL */
		/* DIRTY: the head alone */
	};
};

#define WBG_RING_HEAD_SIZE __builtin_offsetof(struct wbg_ring_event, evidence)
#define WBG_RING_EVENT_SIZE(part) \
	(__builtin_offsetof(struct wbg_ring_event, part) + sizeof(((struct wbg_ring_event *)0)->part))

/* The least an event of kind carries: what a reader may look at. A kind it
 * does not know is read as a removal, as the daemon's reader does. */
static inline __u32 wbg_ring_event_size(__u32 kind)
{
	switch (kind) {
	case WBG_RING_DIRTY:
		return WBG_RING_HEAD_SIZE;
	case WBG_RING_EVIDENCE:
		return WBG_RING_EVENT_SIZE(evidence);
	case WBG_RING_STALL:
		return WBG_RING_EVENT_SIZE(stall);
	default:
		return WBG_RING_EVENT_SIZE(removal);
	}
}

/* Removed cgroups whose dying wbs wbguardd watches ([flush] mode =
 * on-evidence): armed by user space at removal; the first foreign dirtying
 * of an inode still on such a wb sends one WBG_RING_EVIDENCE event and
 * disarms the entry (user space re-arms it if the wb stays dirty). */
#define WBG_DYING_WATCH_MAX 8192
/* Its states: armed for either sign, armed for the stall itself only (a
 * foreign flush to it that got -ENOENT: after a first flush, a writer
 * still on the wb is no news until the kernel fails to flush for it),
 * fired. The event's level says which sign: 0 dirtying, 1 -ENOENT. */
enum wbg_dying_arm {
	WBG_DYING_ARMED = 1,
	WBG_DYING_FIRED = 2,
	WBG_DYING_ARMED_STALL = 3,
};
