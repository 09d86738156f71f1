// SPDX-License-Identifier: GPL-2.0
/*
 * What each cgroup dirtied, so that wbguardd flushes only what a removed
 * cgroup left dirty: per cgroup, the filesystems and block devices
 * (cgroup_devs) and, up to per-cgroup and per-tenant bounds and a shared
 * pool, which regular files (dirtied_inodes, read back through
 * inode_slots). The counts these bounds check are in wbguard-bpf.h:
 * lifecycle.bpf.c gives a released cgroup's back.
 */
#include "wbguard-bpf.h"

/* Inodes recorded per cgroup before its set counts as overflowed. */
const volatile __u32 max_inodes_per_cgroup = 4096;
/* A tenant's share of the inode records (0: none): one tenant's many
 * cheap cgroups cannot evict the others' records. */
const volatile __u32 max_inodes_per_tenant = WBG_INODES_MAX / 4;
/* Fair shares of the records (share.h, set by user space): a tenant's
 * records above inodes_floor come from one pool of inodes_pool, so that a
 * few tenants together cannot fill the table either (0: no pool). */
const volatile __u32 inodes_floor = 0;
const volatile __u32 inodes_pool = 0;
/* records above their tenants' floors now (user space's forget gives
 * back too) */
__u64 inodes_pooled = 0;

struct wbg_cgroup_inodes_map cgroup_inodes SEC(".maps");
struct wbg_cgroup_tenant_map cgroup_tenant SEC(".maps");
struct wbg_tenant_inodes_map tenant_inodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_DIRTIED_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct wbg_cgroup_devs);
} cgroup_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_INODES_MAX);
	__type(key, struct wbg_inode_key);
	__type(value, __u64);
} dirtied_inodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_INODES_MAX);
	__type(key, struct wbg_slot_key);
	__type(value, struct wbg_inode_key);
} inode_slots SEC(".maps");

#define S_IFREG 0100000
#define BDEVFS_MAGIC 0x62646576 /* include/uapi/linux/magic.h */

static __always_inline void note_dev(__u64 cgid, __u32 dev, __u32 kind)
{
	struct wbg_cgroup_devs *v, init = {};
	__u64 tag = WBG_DEV_TAG(kind, dev);

	v = bpf_map_lookup_elem(&cgroup_devs, &cgid);
	if (!v) {
		/* counted: with user space's deletes, how full the LRU has
		 * been, so that a missing set is known to be maybe evicted */
		if (bpf_map_update_elem(&cgroup_devs, &cgid, &init, BPF_NOEXIST) == 0)
			total_add(WBG_T_DEVSET_INSERTS, 1);
		v = bpf_map_lookup_elem(&cgroup_devs, &cgid);
	}
	if (!v)
		return;
	for (int i = 0; i < WBG_DEVS_PER_CGROUP; i++) {
		__u64 cur = v->slot[i].tag;

		/* a free slot: claim it, unless another CPU just did */
		if (cur == 0 && __sync_val_compare_and_swap(&v->slot[i].tag, 0, tag) == 0)
			cur = tag;
		else if (cur == 0)
			cur = v->slot[i].tag;
		if (cur == tag) {
			__sync_fetch_and_add(&v->slot[i].dirtied, 1);
			v->slot[i].last_ns = bpf_ktime_get_ns();
			return;
		}
	}
	v->overflow = 1;
}

static __always_inline void note_inode(__u64 cgid, struct inode *inode, __u32 dev)
{
	struct wbg_inode_key key = {
		.cgroup_id = cgid,
		.ino = BPF_CORE_READ(inode, i_ino),
		.dev = dev,
		.gen = BPF_CORE_READ(inode, i_generation),
	};
	struct wbg_cgroup_inodes *c;
	__u64 one = 1, zero = 0, *seen, *held;
	bool pooled;

	seen = bpf_map_lookup_elem(&dirtied_inodes, &key);
	if (seen) {
		__sync_fetch_and_add(seen, 1);
		return;
	}
	c = bpf_map_lookup_elem(&cgroup_inodes, &cgid);
	if (!c) {
		struct wbg_cgroup_inodes init = {};
		__u64 *t = bpf_map_lookup_elem(&cgroup_tenant, &cgid);

		/* only for cgroups user space tracks (their number has its
		 * shares): untracked ones cannot fill the count table */
		if (!t) {
			total_add(WBG_T_INODES_UNTRACKED, 1);
			return;
		}
		init.tenant = *t;
		bpf_map_update_elem(&cgroup_inodes, &cgid, &init, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&cgroup_inodes, &cgid);
		if (!c) {
			total_add(WBG_T_INODES_CGROUPS_FULL, 1);
			return;
		}
	}
	if (c->count >= max_inodes_per_cgroup) {
		c->overflow = 1;
		return;
	}
	held = lookup_or_init(&tenant_inodes, &c->tenant, &zero);
	if (!held)
		return;
	if (max_inodes_per_tenant && *held >= max_inodes_per_tenant) {
		/* its own set is incomplete (a syncfs for its handover); the
		 * other tenants' records stay */
		if (!c->overflow)
			total_add(WBG_T_INODES_TENANT_FULL, 1);
		c->overflow = 1;
		return;
	}
	pooled = inodes_pool && *held >= inodes_floor;
	if (pooled && inodes_pooled >= inodes_pool) {
		if (!c->overflow)
			total_add(WBG_T_INODES_POOL_FULL, 1);
		c->overflow = 1;
		return;
	}
	if (bpf_map_update_elem(&dirtied_inodes, &key, &one, BPF_NOEXIST) == 0) {
		/* Its slot: the count before this one. Two CPUs adding an inode
		 * to one cgroup at once may take one slot; the lost inode then
		 * makes the set read as incomplete (count above the slots),
		 * which plans a syncfs: safe. (A fetching add needs -mcpu=v3.) */
		struct wbg_slot_key sk = { .cgroup_id = cgid, .idx = c->count };

		__sync_fetch_and_add(&c->count, 1);
		__sync_fetch_and_add(held, 1);
		if (pooled)
			__sync_fetch_and_add(&inodes_pooled, 1);
		bpf_map_update_elem(&inode_slots, &sk, &key, BPF_ANY);
	}
}

/* What a cgroup's wb may hold: a regular file and its filesystem, or a
 * block device's own page cache (its inode lives on the bdev pseudo
 * filesystem and i_rdev names the device). Any other inode is a tenant's:
 * a FIFO, a socket, a directory, or a device node made with mknod on its
 * own volume, whose i_rdev names a host device the tenant may not have
 * written (the write went to that device's bdev inode, seen on its own).
 * Of those only the filesystem is noted, where their metadata is, never
 * the inode (user space would open it) nor the device they name. */
static __always_inline void note_dirtied(__u64 cgid, struct inode *inode)
{
	__u32 mode, dev;

	if (!inode)
		return;
	mode = BPF_CORE_READ(inode, i_mode) & S_IFMT;
	if (mode == S_IFBLK && BPF_CORE_READ(inode, i_sb, s_magic) == BDEVFS_MAGIC) {
		note_dev(cgid, BPF_CORE_READ(inode, i_rdev), WBG_DEV_BDEV);
		return;
	}
	dev = BPF_CORE_READ(inode, i_sb, s_dev);
	note_dev(cgid, dev, WBG_DEV_FS);
	if (mode == S_IFREG)
		note_inode(cgid, inode, dev);
	else
		total_add(WBG_T_SPECIAL_INODES, 1);
}

/* The inode sets come from the least frequent events that keep them
 * whole, not from every dirtied folio (that program ran 1.77 M times for
 * 768 MiB of fio, 3.4% of its time under TCG):
 *
 * An inode went from clean to dirty: queued on its wb's dirty list, by the
 * task that dirtied it (its data, or its times first: a write updates
 * them before it copies). While the inode stays dirty, more of its folios
 * change nothing a handover needs: the set is sticky until the handover
 * ends or the cgroup is released. */
SEC("tp_btf/writeback_dirty_inode_enqueue")
int BPF_PROG(dirty_inode, struct inode *inode)
{
	note_dirtied(bpf_get_current_cgroup_id(), inode);
	return 0;
}

/* An inode moved to another wb (the kernel's foreign-owner switching, or
 * a dying wb's inodes handed to the parent): the new wb's cgroup holds it
 * now, whoever dirtied it. This is how a replacement that appended to its
 * predecessor's still-dirty files gets them in its own set. */
SEC("tp_btf/inode_switch_wbs")
int BPF_PROG(dirty_switch, struct inode *inode, struct bdi_writeback *old_wb, struct bdi_writeback *new_wb)
{
	if (!new_wb)
		return 0;
	note_dirtied(BPF_CORE_READ(new_wb, memcg_css, cgroup, kn, id), inode);
	return 0;
}
