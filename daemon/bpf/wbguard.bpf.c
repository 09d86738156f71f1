// SPDX-License-Identifier: GPL-2.0
/*
 * Counts the results of the kernel's foreign flushes: every call of
 * cgroup_writeback_by_id() from balance_dirty_pages(), by return value and by
 * whether its target memcg was still online. -ENOENT for a dying target is
 * the stall this project exists for; 0 for a dying target means the kernel
 * has the dying-wb fallback.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "wbguard.h"

char LICENSE[] SEC("license") = "GPL";

struct inflight {
	__u64 cgroup_id;
	__u32 target_state;
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
	__uint(max_entries, WBG_WBID_KEYS_MAX);
	__type(key, struct wbg_wbid_key);
	__type(value, __u64);
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
	return 0;
}

SEC("fexit/cgroup_writeback_by_id")
int BPF_PROG(wbid_exit, __u64 bdi_id, int memcg_id, enum wb_reason reason, struct wb_completion *done,
	     int ret)
{
	__u64 task = bpf_get_current_pid_tgid();
	struct wbg_wbid_key key = { .ret = ret };
	struct inflight *in = bpf_map_lookup_elem(&wbid_inflight, &task);
	__u64 zero = 0, *count;

	if (in) {
		key.cgroup_id = in->cgroup_id;
		key.target_state = in->target_state;
		bpf_map_delete_elem(&wbid_inflight, &task);
	}
	count = bpf_map_lookup_elem(&wbid_results, &key);
	if (!count) {
		/* Two CPUs may insert at once: NOEXIST keeps the first, both add. */
		bpf_map_update_elem(&wbid_results, &key, &zero, BPF_NOEXIST);
		count = bpf_map_lookup_elem(&wbid_results, &key);
	}
	if (count)
		__sync_fetch_and_add(count, 1);
	return 0;
}
