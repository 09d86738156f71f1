/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF units (*.bpf.c) share, and only they (wbguard.h is the
 * header shared with user space): the maps and globals more than one unit
 * touches, declared extern here and defined once in the unit named beside
 * each, and the inline helpers over them.
 *
 * The units are compiled apart and linked into one object by bpftool gen
 * object (libbpf's static linker), which resolves an extern map against
 * the one definition whose type, key, value and size match; so a shared
 * map's layout is a named struct here that both its definition and its
 * extern declaration use.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "wbguard.h"

#define S_IFMT 00170000
#define S_IFBLK 0060000

/* Exact node-wide counters, indexed by enum wbg_total (wbguard.bpf.c). */
struct wbg_totals_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, _WBG_TOTAL_MAX);
	__type(key, __u32);
	__type(value, __u64);
};
extern struct wbg_totals_map totals SEC(".maps");

/* The event ring: struct wbg_ring_event, of every kind (wbguard.bpf.c). */
struct wbg_event_ring_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
};
extern struct wbg_event_ring_map event_ring SEC(".maps");

/* Armed dying cgroups (enum wbg_dying_arm), and how many: with none, the
 * foreign-dirtying programs skip the lookup (foreign-flush.bpf.c; the
 * -ENOENT sign fires there, the dirtying sign in kernel-paths.bpf.c). */
struct wbg_dying_watch_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_DYING_WATCH_MAX);
	__type(key, __u64);
	__type(value, __u64);
};
extern struct wbg_dying_watch_map dying_watch SEC(".maps");
extern __u32 dying_watched;

/* The inode records' counts (dirtied.bpf.c, which adds to them;
 * lifecycle.bpf.c gives a released cgroup's back). */

/* A hash, not an LRU: each entry's count is part of its tenant's, so an
 * entry must only go where its count is given back (user space's forget,
 * or the cgroup's release). Full: new cgroups' sets are incomplete
 * (counted). */
struct wbg_cgroup_inodes_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct wbg_cgroup_inodes);
};
extern struct wbg_cgroup_inodes_map cgroup_inodes SEC(".maps");

/* cgroup id -> its tenant's (the tenant root's cgroup id), set by user
 * space as it tracks cgroups; a cgroup it does not track counts as 0. */
struct wbg_cgroup_tenant_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_TENANT_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, __u64);
};
extern struct wbg_cgroup_tenant_map cgroup_tenant SEC(".maps");

/* Inode records held per tenant. An LRU: losing a count lets that tenant
 * start again from 0 (its share applies anew), never blocks it for good. */
struct wbg_tenant_inodes_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_TENANTS_MAX);
	__type(key, __u64);
	__type(value, __u64);
};
extern struct wbg_tenant_inodes_map tenant_inodes SEC(".maps");

/* The records' pool (share.h): its floor and size, set by user space, and
 * what is taken of it now. */
extern const volatile __u32 inodes_floor;
extern const volatile __u32 inodes_pool;
extern __u64 inodes_pooled;

/* The value for key, inserted as init first if absent. Two CPUs may insert
 * at once: NOEXIST keeps the first, and both then use that one. */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

static __always_inline void total_add(__u32 idx, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&totals, &idx);

	if (c)
		*c += v; /* this CPU's slot: no atomics needed */
}

/* An event on the ring with its head filled in; NULL when the ring is
 * full. size is WBG_RING_EVENT_SIZE of the kind's part (or
 * WBG_RING_HEAD_SIZE): a constant once inlined, as the verifier wants,
 * and it bounds what the caller may write. */
static __always_inline struct wbg_ring_event *ring_reserve(__u64 size, __u32 kind, __u64 cgroup_id, __u32 level,
							   __u32 root)
{
	struct wbg_ring_event *e = bpf_ringbuf_reserve(&event_ring, size, 0);

	if (!e)
		return NULL;
	e->cgroup_id = cgroup_id;
	e->kind = kind;
	e->level = level;
	e->root = root;
	e->pad = 0;
	return e;
}

/* One event per arming, for a watched dying cgroup armed as `armed`:
 * sign 0 (a dirtying, with its inode) or 1 (-ENOENT, inode NULL). */
static __always_inline void dying_fire(__u64 id, __u64 armed, __u32 sign, struct inode *inode)
{
	__u64 *st = bpf_map_lookup_elem(&dying_watch, &id);
	struct wbg_ring_event *e;

	if (!st || *st != armed || __sync_val_compare_and_swap(st, armed, WBG_DYING_FIRED) != armed)
		return;
	e = ring_reserve(WBG_RING_EVENT_SIZE(evidence), WBG_RING_EVIDENCE, id, sign, 0);
	if (!e) {
		*st = armed; /* the next one tries again */
		total_add(WBG_T_LIFE_LOST, 1);
		return;
	}
	e->evidence.dev = inode ? BPF_CORE_READ(inode, i_sb, s_dev) : 0;
	e->evidence.ino = inode ? BPF_CORE_READ(inode, i_ino) : 0;
	e->evidence.gen = inode ? BPF_CORE_READ(inode, i_generation) : 0;
	e->evidence.dirtier = bpf_get_current_cgroup_id();
	bpf_ringbuf_submit(e, 0);
}
