// SPDX-License-Identifier: GPL-2.0
/*
 * The results of the kernel's foreign flushes: every call of
 * cgroup_writeback_by_id() from balance_dirty_pages(), counted by return
 * value and by whether its target memcg was still online. -ENOENT for a
 * dying target is the stall this project exists for; 0 for a dying target
 * means the kernel has the dying-wb fallback.
 *
 * That -ENOENT is also news on the event ring: the evidence sign of a
 * watched dying cgroup (its watch, dying_watch, is defined here), or one
 * stall report for a dying cgroup nothing watches.
 */
#include "wbguard-bpf.h"

struct wbg_dying_watch_map dying_watch SEC(".maps");
__u32 dying_watched = 0;

/* Set by user space while it handles the stall of cgroups it does not
 * watch (mitigating, on-evidence or eager alike). */
__u32 stall_events = 0;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_STALL_REPORTED_MAX);
	__type(key, __u64);
	__type(value, __u64);
} stall_reported SEC(".maps");

/* One event per dying cgroup, whatever rate its foreign flushes fail at.
 * The bdi is named by its dev_name ("254:0" for a disk): its struct
 * device's devt is 0 (a class device), so the name is what says which
 * block device it writes. */
static __always_inline void stall_report(__u64 id, struct backing_dev_info *bdi)
{
	__u64 now = bpf_ktime_get_ns();
	struct wbg_ring_event *e;

	if (bpf_map_update_elem(&stall_reported, &id, &now, BPF_NOEXIST) != 0) {
		total_add(WBG_T_STALL_REPEATS, 1);
		return;
	}
	e = ring_reserve(WBG_RING_EVENT_SIZE(stall), WBG_RING_STALL, id, 0, 0);
	if (!e) {
		bpf_map_delete_elem(&stall_reported, &id); /* the next one tries again */
		total_add(WBG_T_LIFE_LOST, 1);
		return;
	}
	e->stall.bdi[0] = 0;
	if (bdi)
		BPF_CORE_READ_STR_INTO(&e->stall.bdi, bdi, dev_name);
	bpf_ringbuf_submit(e, 0);
	total_add(WBG_T_STALL_EVENTS, 1);
}

struct inflight {
	__u64 cgroup_id;
	__u32 target_state;
	__u32 pad;
	struct backing_dev_info *bdi;
};

/* Per task: what wb_get_lookup() saw while the task is inside
 * cgroup_writeback_by_id(); fexit reads and deletes it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_INFLIGHT_MAX);
	__type(key, __u64);
	__type(value, struct inflight);
} wbid_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_WBID_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct wbg_wbid_counts);
} wbid_results SEC(".maps");

SEC("fentry/cgroup_writeback_by_id")
int BPF_PROG(wbid_enter)
{
	__u64 task = bpf_get_current_pid_tgid();
	struct inflight in = { .target_state = WBG_TARGET_UNKNOWN };

	bpf_map_update_elem(&wbid_inflight, &task, &in, BPF_ANY);
	return 0;
}

/* wb_get_lookup() is the one place that has the target's css in hand; it is
 * also called outside foreign flushes, which the inflight entry tells apart. */
SEC("fentry/wb_get_lookup")
int BPF_PROG(wbid_lookup, struct backing_dev_info *bdi, struct cgroup_subsys_state *css)
{
	__u64 task = bpf_get_current_pid_tgid();
	struct inflight *in = bpf_map_lookup_elem(&wbid_inflight, &task);

	if (!in)
		return 0;
	in->cgroup_id = BPF_CORE_READ(css, cgroup, kn, id);
	in->target_state = (BPF_CORE_READ(css, flags) & CSS_ONLINE) ? WBG_TARGET_LIVE : WBG_TARGET_DYING;
	in->bdi = bdi;
	return 0;
}

SEC("fexit/cgroup_writeback_by_id")
int BPF_PROG(wbid_exit, __u64 bdi_id, int memcg_id, enum wb_reason reason, struct wb_completion *done,
	     int ret)
{
	__u64 task = bpf_get_current_pid_tgid();
	struct inflight *in = bpf_map_lookup_elem(&wbid_inflight, &task);
	struct wbg_wbid_counts *c, zero = {};
	__u32 result = ret == 0 ? WBG_WBID_OK : ret == -2 /* ENOENT */ ? WBG_WBID_ENOENT : WBG_WBID_OTHER;
	__u64 cgroup_id = 0;
	__u32 state = WBG_TARGET_UNKNOWN;
	struct backing_dev_info *bdi = NULL;

	if (in) {
		cgroup_id = in->cgroup_id;
		state = in->target_state % 3;
		bdi = in->bdi;
		bpf_map_delete_elem(&wbid_inflight, &task);
	}
	total_add(WBG_T_WBID + result * 3 + state, 1);
	/* the stall itself, for a watched dying cgroup: whichever way armed */
	if (result == WBG_WBID_ENOENT && state == WBG_TARGET_DYING) {
		if (dying_watched && bpf_map_lookup_elem(&dying_watch, &cgroup_id)) {
			dying_fire(cgroup_id, WBG_DYING_ARMED, 1, NULL);
			dying_fire(cgroup_id, WBG_DYING_ARMED_STALL, 1, NULL);
		} else if (stall_events && cgroup_id)
			stall_report(cgroup_id, bdi);
	}
	c = lookup_or_init(&wbid_results, &cgroup_id, &zero);
	/* one flat index, kept from being folded away so that the verifier
	 * sees its bound */
	__u32 idx = result * 3 + state;

	barrier_var(idx);
	if (c && idx < _WBG_WBID_RESULT_MAX * 3)
		__sync_fetch_and_add(&((__u64 *)c->n)[idx], 1);
	return 0;
}
