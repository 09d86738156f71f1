/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loads wbguard's BPF programs and reads their counters. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "wbguard.h"
#include "verdict.h"

struct wbg_bpf;

/* Opens, loads and attaches what this kernel supports. Programs whose hook is
 * missing are skipped; wbg_bpf_attached() says which were attached. */
/* Program groups: what to load. */
#define WBG_BPF_WBID (1U << 0)    /* cgroup_writeback_by_id() results */
#define WBG_BPF_DIRTIED (1U << 1) /* what each cgroup dirtied */
#define WBG_BPF_LIFE (1U << 2)   /* every cgroup removal and release, with its id */
#define WBG_BPF_PATHS (1U << 3)   /* fallback paths, dirty pauses, wb switches */
#define WBG_BPF_ALL (WBG_BPF_WBID | WBG_BPF_DIRTIED | WBG_BPF_LIFE | WBG_BPF_PATHS)

/* Where tracefs is when it is not at /sys/kernel/tracing (in a container:
 * the host's, below /proc/1/root); for classic tracepoints. */
void wbg_bpf_set_tracefs(const char *dir);
/* The bounds of the per-cgroup tables; NULL or a 0 field: the BPF
 * object's own defaults. */
struct wbg_bpf_limits {
	unsigned max_inodes_per_cgroup; /* inode records per cgroup */
	unsigned max_inodes_per_tenant; /* ... per tenant (UINT_MAX: no share) */
	unsigned dirtied_cgroups;       /* dirtied-device sets (WBG_DIRTIED_CGROUPS_MAX) */
	unsigned inode_records;         /* (cgroup, inode) records (WBG_INODES_MAX) */
};
int wbg_bpf_open(unsigned groups, const struct wbg_bpf_limits *limits, struct wbg_bpf **ret);
/* The groups that did load (a subset of those asked for). */
unsigned wbg_bpf_groups(const struct wbg_bpf *b);
const char *wbg_bpf_group_name(unsigned group);
struct wbg_bpf *wbg_bpf_free(struct wbg_bpf *b);
static inline void wbg_bpf_freep(struct wbg_bpf **b)
{
	if (*b)
		wbg_bpf_free(*b);
}

/* Which named program is attached ("wbid_exit", ...). */
int wbg_bpf_attached(const struct wbg_bpf *b, const char *prog);
/* Every program: attached or not, and why not ("kernel has no X", "attach
 * failed: ...", "not loaded: GROUP"). */
typedef int (*wbg_prog_cb)(const char *name, bool attached, const char *why, void *userdata);
int wbg_bpf_foreach_program(const struct wbg_bpf *b, wbg_prog_cb cb, void *userdata);

/* The exact node-wide counters (enum wbg_total), summed over CPUs. */
int wbg_bpf_totals(const struct wbg_bpf *b, uint64_t ret[_WBG_TOTAL_MAX]);
/* The per-cgroup pause and switch series (LRU-bounded). */
typedef int (*wbg_stats_cb)(uint64_t cgroup_id, const struct wbg_cgroup_stats *st, void *userdata);
int wbg_bpf_foreach_cgroup_stats(const struct wbg_bpf *b, wbg_stats_cb cb, void *userdata);
/* Drops a cgroup's per-cgroup series (pauses, switches, flush results);
 * the totals keep its counts. */
int wbg_bpf_drop_cgroup_series(const struct wbg_bpf *b, uint64_t cgroup_id);

typedef int (*wbg_wbid_cb)(uint64_t cgroup_id, const struct wbg_wbid_counts *counts, void *userdata);
/* Calls cb for every cgroup_writeback_by_id() result series; stops at the
 * first negative return of cb and returns it. */
int wbg_bpf_foreach_wbid(const struct wbg_bpf *b, wbg_wbid_cb cb, void *userdata);

const char *wbg_target_state_to_string(uint32_t s);
/* enum wbg_wbid_result: "ok", "enoent", "other" */
const char *wbg_wbid_result_to_string(unsigned r);
/* Fills the observed evidence (foreign flushes to dying targets that
 * succeeded or got -ENOENT, dying-wb lookups that found one, bdev flushes);
 * the static fields are left alone. */
int wbg_bpf_evidence(const struct wbg_bpf *b, struct wbg_evidence *e);
/* Whether the running kernel's BTF has struct type with that member: 1, 0,
 * or -ENOENT without the struct. */
int btf_struct_has_member(const char *type, const char *member);

struct wbg_dirtied_dev {
	uint32_t dev; /* kernel encoding: major << 20 | minor */
	uint32_t kind; /* enum wbg_dev_kind */
	uint64_t dirtied, last_ns;
};

/* What the cgroup dirtied since it was first seen (or last forgotten). The
 * arrays are malloc'ed. *ret_overflow: it dirtied more devices than the set
 * holds. *ret_complete is false when the inode set is not the whole story
 * (per-cgroup bound hit, or entries evicted). */
int wbg_bpf_cgroup_devs(const struct wbg_bpf *b, uint64_t cgroup_id, struct wbg_dirtied_dev **ret, size_t *ret_n,
			bool *ret_overflow, bool *ret_found);
/* The sets are an LRU: once it has held more than about its bound (the
 * kernel's LRU may evict a little before max_entries), a missing set may be
 * an evicted one rather than "dirtied nothing". */
bool wbg_bpf_devsets_may_have_evicted(const struct wbg_bpf *b);
/* Sets the LRU evicted so far: created - deleted - held now (a walk of the
 * map, only once evictions are possible). */
int wbg_bpf_devsets_evicted(const struct wbg_bpf *b, uint64_t *ret);
/* The inodes BPF holds for a cgroup. Complete only when the cgroup's count
 * was found, did not overflow max_inodes, and every record it counted is
 * still there; ret_evicted: records it counted that the LRU evicted. */
int wbg_bpf_cgroup_inodes(const struct wbg_bpf *b, uint64_t cgroup_id, struct wbg_inode_key **ret, size_t *ret_n,
			  bool *ret_complete, size_t *ret_evicted);
/* Its device set and inode count go, the count given back to its tenant. */
int wbg_bpf_forget_cgroup(struct wbg_bpf *b, uint64_t cgroup_id);
/* Which tenant a tracked cgroup's inode records count against (its tenant
 * root's cgroup id), and its end; -E2BIG when the map is full (the cgroup
 * then counts with the untracked ones). */
int wbg_bpf_tenant_set(struct wbg_bpf *b, uint64_t cgroup_id, uint64_t tenant_id);
void wbg_bpf_tenant_forget(struct wbg_bpf *b, uint64_t cgroup_id);
/* Cgroups wbg_bpf_tenant_set() had no room for. */
uint64_t wbg_bpf_tenant_map_full(const struct wbg_bpf *b);

/* Kernel dev_t encoding (major << 20 | minor) to user space's. */
#define WBG_KDEV_MAJOR(d) ((unsigned)((d) >> 20))
#define WBG_KDEV_MINOR(d) ((unsigned)((d) & ((1U << 20) - 1)))

/* On-evidence flushing (lifecycle.h): whether this kernel's foreign-dirtying
 * program and the event ring are attached, so that a watched dying
 * cgroup's evidence arrives; arm (again) and forget one. Arming a full map
 * gives -E2BIG. */
bool wbg_bpf_dying_supported(const struct wbg_bpf *b);
int wbg_bpf_dying_arm(struct wbg_bpf *b, uint64_t cgroup_id, bool stall_only);
int wbg_bpf_dying_forget(struct wbg_bpf *b, uint64_t cgroup_id);
/* The stall as evidence: whether this kernel reports -ENOENT foreign flushes
 * to dying cgroups (the fexit program attached, and the ring), and turning
 * the WBG_RING_STALL events on or off. A cgroup's stall is reported once
 * until stall_forget (its handover ended). */
bool wbg_bpf_stall_supported(const struct wbg_bpf *b);
void wbg_bpf_stall_enable(struct wbg_bpf *b, bool on);
/* Whether they are on now (supported, and enabled). */
bool wbg_bpf_stall_enabled(const struct wbg_bpf *b);
int wbg_bpf_stall_forget(struct wbg_bpf *b, uint64_t cgroup_id);

/* Per-pod expiry: once armed, the cgroup's next dirtying fires one
 * WBG_RING_DIRTY event on the event ring and disarms it. */
int wbg_bpf_expiry_arm(struct wbg_bpf *b, uint64_t cgroup_id);
int wbg_bpf_expiry_forget(struct wbg_bpf *b, uint64_t cgroup_id);

/* The event ring (removals, releases, watched pods' first
 * dirtying: enum wbg_ring_kind): poll its fd, then consume (cb per event).
 * cb sees an event only as long as its kind carries (wbg_ring_event_size())
 * and, when that is a removal's, with its path NUL-terminated in its field. */
typedef int (*wbg_ring_event_cb)(const struct wbg_ring_event *e, void *userdata);
int wbg_bpf_ring_open(struct wbg_bpf *b, wbg_ring_event_cb cb, void *userdata);
int wbg_bpf_ring_fd(const struct wbg_bpf *b);
int wbg_bpf_ring_consume(struct wbg_bpf *b);
