// SPDX-License-Identifier: GPL-2.0
/*
 * The stall's symptom and its neighbour: writers sleeping in
 * balance_dirty_pages(), and storms of inode wb switches; node-wide in
 * the totals and per cgroup in cgroup_stats (an LRU).
 */
#include "wbguard-bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_STATS_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct wbg_cgroup_stats);
} cgroup_stats SEC(".maps");

/* A classic tracepoint's record is the kernel's, not vmlinux.h's: its
 * fields move and change width between releases (7.x widened the
 * writeback events' inode numbers to u64 and moved balance_dirty_pages'
 * cgroup_ino). CORE_READ_INT reads a field at the running kernel's offset,
 * size and signedness (libbpf's field relocations), where BPF_CORE_READ
 * would read vmlinux.h's size at the new offset. */
#define CORE_READ_INT(s, field) BPF_CORE_READ_BITFIELD_PROBED(s, field)

/* The symptom: a writer sleeping in balance_dirty_pages(). The classic
 * tracepoint's record has the pause in ms already (tp_btf's argument is in
 * jiffies, and HZ is not known here) and the writer wb's cgroup. It fires
 * without a sleep too (pause <= 0), which is not counted. */
SEC("tracepoint/writeback/balance_dirty_pages")
int path_bdp(struct trace_event_raw_balance_dirty_pages *e)
{
	struct wbg_cgroup_stats *st, init = {};
	long pause = (long)CORE_READ_INT(e, pause);
	__u64 cgid = CORE_READ_INT(e, cgroup_ino);

	if (pause <= 0)
		return 0;
	total_add(WBG_T_BDP_PAUSES, 1);
	total_add(WBG_T_BDP_PAUSE_MS, pause);
	st = lookup_or_init(&cgroup_stats, &cgid, &init);
	if (st) {
		__sync_fetch_and_add(&st->pauses, 1);
		__sync_fetch_and_add(&st->pause_ms, pause);
	}
	return 0;
}

/* Wb switch storms: inodes switched between wbs, by the cgroup they left. */
SEC("tracepoint/writeback/inode_switch_wbs")
int path_switch(struct trace_event_raw_inode_switch_wbs *e)
{
	struct wbg_cgroup_stats *st, init = {};
	__u64 cgid = CORE_READ_INT(e, old_cgroup_ino);

	total_add(WBG_T_SWITCHES, 1);
	st = lookup_or_init(&cgroup_stats, &cgid, &init);
	if (st)
		__sync_fetch_and_add(&st->switches_from, 1);
	return 0;
}
