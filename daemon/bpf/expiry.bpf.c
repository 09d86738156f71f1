// SPDX-License-Identifier: GPL-2.0
/*
 * Per-pod expiry: a pod user space armed (expiry_watch) sends one
 * WBG_RING_DIRTY event at its next dirtying of any folio, and is disarmed
 * until user space writes its data back and arms it again. Its program
 * runs per dirtied folio, so user space attaches it only while some pod
 * has a per-pod expiry.
 */
#include "wbguard-bpf.h"

/* How many pods have a per-pod expiry (set by user space). */
__u32 expiry_pods = 0;

/* Pods with a per-pod expiry, armed by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_EXPIRY_PODS_MAX);
	__type(key, __u64);
	__type(value, __u64); /* 64 bits: what BPF's cmpxchg takes without -mcpu=v3 */
} expiry_watch SEC(".maps");

/* An armed pod's first dirtying since: one event, and the pod is disarmed
 * (user space re-arms it when it writes the pod's data back). */
static __always_inline void expiry_note(__u64 cgid)
{
	__u64 *st = bpf_map_lookup_elem(&expiry_watch, &cgid);
	struct wbg_ring_event *e;

	if (!st || *st != WBG_EXPIRY_ARMED ||
	    __sync_val_compare_and_swap(st, WBG_EXPIRY_ARMED, WBG_EXPIRY_FIRED) != WBG_EXPIRY_ARMED)
		return;
	e = ring_reserve(WBG_RING_HEAD_SIZE, WBG_RING_DIRTY, cgid, 0, 0);
	if (!e) {
		*st = WBG_EXPIRY_ARMED; /* try again on the next dirtying */
		return;
	}
	bpf_ringbuf_submit(e, 0);
}

/* The last (cgroup, inode) each CPU saw: a writer dirties many folios of
 * one file in a row, and those need no map lookups. */
struct last_seen {
	__u64 cgroup_id;
	__u64 inode;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_seen);
} dirty_last SEC(".maps");

/* Per-pod expiry needs a pod's next dirtying of any folio: its inode may
 * still be dirty from before the round (sync_file_range writes the pages
 * but leaves the inode on the dirty list), so dirtied.bpf.c's enqueue
 * program would not fire. User space attaches this program only while some pod has a
 * per-pod expiry: other nodes' writers pay nothing per folio. */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(expiry_folio, struct folio *folio, struct address_space *mapping)
{
	__u64 cgid = bpf_get_current_cgroup_id();
	struct last_seen *last;
	__u32 zero = 0;

	if (!mapping || !expiry_pods)
		return 0;
	last = bpf_map_lookup_elem(&dirty_last, &zero);
	if (last) {
		__u64 inode = (__u64)BPF_CORE_READ(mapping, host);

		if (last->cgroup_id == cgid && last->inode == inode)
			return 0;
		last->cgroup_id = cgid;
		last->inode = inode;
	}
	expiry_note(cgid);
	return 0;
}
