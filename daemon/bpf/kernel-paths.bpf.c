// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own foreign-flush and fallback paths, counted where this
 * kernel has them (user space skips the programs whose function or
 * tracepoint is missing, and of an event's two shapes loads the one the
 * kernel has): the dying-wb fallback, the separate bdev flush and its
 * workqueue, writeback:flush_foreign and writeback:track_foreign_dirty.
 *
 * A foreign dirtying is also the stall's first sign when the dirtied
 * inode's wb is a watched dying cgroup's: its evidence event goes from
 * here (the watch is foreign-flush.bpf.c's).
 */
#include "wbguard-bpf.h"

/* The dying-wb fallback: cgroup_writeback_by_id() found no live wb and
 * asked for a dying one. A wb back means the flush reaches the dying
 * cgroup's inodes. */
SEC("fexit/wb_get_lookup_dying")
int BPF_PROG(wbid_lookup_dying, struct backing_dev_info *bdi, struct cgroup_subsys_state *css,
	     struct bdi_writeback *ret)
{
	total_add(ret ? WBG_T_LOOKUP_DYING_FOUND : WBG_T_LOOKUP_DYING_NONE, 1);
	return 0;
}

/* The separate bdev flush: a foreign block device's page cache written
 * back on its own (the name differs between the patch's versions). */
SEC("fentry/bdev_flush_by_dev")
int BPF_PROG(path_bdev_flush)
{
	total_add(WBG_T_BDEV_FLUSH, 1);
	return 0;
}

SEC("fentry/bdev_writeback_by_dev")
int BPF_PROG(path_bdev_wb)
{
	total_add(WBG_T_BDEV_FLUSH, 1);
	return 0;
}

/* ... from the memcg_bdev_frn_flusher workqueue: how often, how long. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u64);
} frn_work_start SEC(".maps");

SEC("fentry/bdev_frn_flush_work")
int BPF_PROG(path_frn_enter)
{
	__u64 task = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();

	bpf_map_update_elem(&frn_work_start, &task, &now, BPF_ANY);
	return 0;
}

SEC("fexit/bdev_frn_flush_work")
int BPF_PROG(path_frn_exit)
{
	__u64 task = bpf_get_current_pid_tgid(), *start = bpf_map_lookup_elem(&frn_work_start, &task);

	total_add(WBG_T_FRN_WORK, 1);
	if (start) {
		total_add(WBG_T_FRN_WORK_NS, bpf_ktime_get_ns() - *start);
		bpf_map_delete_elem(&frn_work_start, &task);
	}
	return 0;
}

/* writeback:flush_foreign and track_foreign_dirty, with and without seed
 * 001's dev argument: user space loads the variant whose argument count
 * matches the running kernel's event (from BTF, not a version). */
static __always_inline int flush_foreign(__u32 dev)
{
	total_add(dev ? WBG_T_FLUSH_FOREIGN_BDEV : WBG_T_FLUSH_FOREIGN_WB, 1);
	return 0;
}

SEC("tp_btf/flush_foreign")
int BPF_PROG(path_fforeign, struct bdi_writeback *wb, unsigned int bdi_id, unsigned int memcg_id)
{
	return flush_foreign(0);
}

SEC("tp_btf/flush_foreign")
int BPF_PROG(path_fforeign_dev, struct bdi_writeback *wb, unsigned int bdi_id, unsigned int memcg_id, dev_t dev)
{
	return flush_foreign(dev);
}

/* The stall's first sign: a live cgroup dirtying a folio of an inode whose
 * wb is a watched dying cgroup's. */
static __always_inline void dying_evidence(struct folio *folio, struct bdi_writeback *wb)
{
	__u64 id;

	if (!dying_watched)
		return;
	id = BPF_CORE_READ(wb, memcg_css, cgroup, kn, id);
	dying_fire(id, WBG_DYING_ARMED, 0, BPF_CORE_READ(folio, mapping, host));
}

/* Whether the foreign folio is a block device's page cache tells the
 * separate bdev flush's case apart on any kernel; dev says whether the
 * kernel took its own path for it (a kernel with the code but not the path
 * shows dev 0 here). */
static __always_inline int foreign_dirty(struct folio *folio, __u32 dev)
{
	__u32 mode = BPF_CORE_READ(folio, mapping, host, i_mode);

	if ((mode & S_IFMT) != S_IFBLK)
		total_add(WBG_T_FOREIGN_DIRTY_WB, 1);
	else
		total_add(dev ? WBG_T_FOREIGN_DIRTY_BDEV : WBG_T_FOREIGN_DIRTY_BDEV_SHARED, 1);
	return 0;
}

SEC("tp_btf/track_foreign_dirty")
int BPF_PROG(path_fdirty, struct folio *folio, struct bdi_writeback *wb)
{
	dying_evidence(folio, wb);
	return foreign_dirty(folio, 0);
}

SEC("tp_btf/track_foreign_dirty")
int BPF_PROG(path_fdirty_dev, struct folio *folio, struct bdi_writeback *wb, dev_t dev)
{
	dying_evidence(folio, wb);
	return foreign_dirty(folio, dev);
}
