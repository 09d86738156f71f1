// SPDX-License-Identifier: GPL-2.0
/*
 * Counts the results of the kernel's foreign flushes: every call of
 * cgroup_writeback_by_id() from balance_dirty_pages(), by return value and by
 * whether its target memcg was still online. -ENOENT for a dying target is
 * the stall this project exists for; 0 for a dying target means the kernel
 * has the dying-wb fallback.
 *
 * Also records, per cgroup, which filesystems and block devices it dirtied
 * and (up to a bound) which inodes, so wbguardd flushes only what a removed
 * cgroup left dirty; and counts the kernel's own fallback paths (the dying-wb
 * fallback, the separate bdev flush), balance_dirty_pages() pauses and inode
 * wb switches (their storms).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "wbguard.h"

char LICENSE[] SEC("license") = "GPL";

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

/* Exact node-wide counters, indexed by enum wbg_total. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, _WBG_TOTAL_MAX);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps");

static __always_inline void total_add(__u32 idx, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&totals, &idx);

	if (c)
		*c += v; /* this CPU's slot: no atomics needed */
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} event_ring SEC(".maps");

/* Armed dying cgroups (WBG_DYING_WATCH_MAX), and how many: with none, the
 * foreign-dirtying programs skip the lookup. */
__u32 dying_watched = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_DYING_WATCH_MAX);
	__type(key, __u64);
	__type(value, __u64);
} dying_watch SEC(".maps");

/* One event per arming, for a watched dying cgroup armed as `armed`:
 * sign 0 (a dirtying, with its inode) or 1 (-ENOENT, inode NULL). */
static __always_inline void dying_fire(__u64 id, __u64 armed, __u32 sign, struct inode *inode)
{
	__u64 *st = bpf_map_lookup_elem(&dying_watch, &id);
	struct wbg_ring_event *e;

	if (!st || *st != armed || __sync_val_compare_and_swap(st, armed, WBG_DYING_FIRED) != armed)
		return;
	e = bpf_ringbuf_reserve(&event_ring, sizeof(*e), 0);
	if (!e) {
		*st = armed; /* the next one tries again */
		total_add(WBG_T_LIFE_LOST, 1);
		return;
	}
	e->kind = WBG_LIFE_EVIDENCE;
	e->cgroup_id = id;
	e->level = sign;
	e->root = 0;
	e->dev = inode ? BPF_CORE_READ(inode, i_sb, s_dev) : 0;
	e->ino = inode ? BPF_CORE_READ(inode, i_ino) : 0;
	e->gen = inode ? BPF_CORE_READ(inode, i_generation) : 0;
	e->pad = 0;
	e->dirtier = bpf_get_current_cgroup_id();
	e->path[0] = 0;
	bpf_ringbuf_submit(e, 0);
}

struct inflight {
	__u64 cgroup_id;
	__u32 target_state;
	__u32 pad;
	struct backing_dev_info *bdi;
};

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
	e = bpf_ringbuf_reserve(&event_ring, sizeof(*e), 0);
	if (!e) {
		bpf_map_delete_elem(&stall_reported, &id); /* the next one tries again */
		total_add(WBG_T_LIFE_LOST, 1);
		return;
	}
	e->kind = WBG_LIFE_STALL;
	e->cgroup_id = id;
	e->level = 0;
	e->root = 0;
	e->dev = 0;
	e->ino = 0;
	e->gen = 0;
	e->pad = 0;
	e->dirtier = bpf_get_current_cgroup_id();
	e->path[0] = 0;
	if (bdi)
		BPF_CORE_READ_STR_INTO(&e->path, bdi, dev_name);
	bpf_ringbuf_submit(e, 0);
	total_add(WBG_T_STALL_EVENTS, 1);
}

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

/* A hash, not an LRU: each entry's count is part of its tenant's, so an
 * entry must only go where its count is given back (user space's forget,
 * or the cgroup's release below). Full: new cgroups' sets are incomplete
 * (counted). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct wbg_cgroup_inodes);
} cgroup_inodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_INODES_MAX);
	__type(key, struct wbg_slot_key);
	__type(value, struct wbg_inode_key);
} inode_slots SEC(".maps");

/* cgroup id -> its tenant's (the tenant root's cgroup id), set by user
 * space as it tracks cgroups; a cgroup it does not track counts as 0. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WBG_TENANT_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, __u64);
} cgroup_tenant SEC(".maps");

/* Inode records held per tenant. An LRU: losing a count lets that tenant
 * start again from 0 (its share applies anew), never blocks it for good. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_TENANTS_MAX);
	__type(key, __u64);
	__type(value, __u64);
} tenant_inodes SEC(".maps");

#define S_IFMT 00170000
#define S_IFBLK 0060000
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

/* A released cgroup's inode count goes, and its tenant gets its share back
 * (user space forgets the ones it handed over earlier, the same way). */
static __always_inline void release_inodes(__u64 cgid)
{
	struct wbg_cgroup_inodes *c = bpf_map_lookup_elem(&cgroup_inodes, &cgid);
	__u64 *held;

	bpf_map_delete_elem(&cgroup_tenant, &cgid);
	if (!c)
		return;
	held = bpf_map_lookup_elem(&tenant_inodes, &c->tenant);
	if (held) {
		__u64 n = *held < c->count ? *held : c->count, back = inodes_pool ? wbg_pooled_part(*held, n, inodes_floor) : 0;

		if (back && inodes_pooled >= back)
			__sync_fetch_and_add(&inodes_pooled, -(__s64)back);
		__sync_fetch_and_add(held, -(__s64)n);
	}
	bpf_map_delete_elem(&cgroup_inodes, &cgid);
}

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
	e = bpf_ringbuf_reserve(&event_ring, sizeof(*e), 0);
	if (!e) {
		*st = WBG_EXPIRY_ARMED; /* try again on the next dirtying */
		return;
	}
	e->kind = WBG_LIFE_DIRTY;
	e->cgroup_id = cgid;
	e->dev = 0;
	e->ino = e->dirtier = 0;
	e->level = 0;
	e->root = 0;
	e->path[0] = 0;
	bpf_ringbuf_submit(e, 0);
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
 * but leaves the inode on the dirty list), so the enqueue above would not
 * fire. User space attaches this program only while some pod has a
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

/*
 * The kernel's fallback paths, where this kernel has them (user space skips
 * the programs whose function or tracepoint is missing).
 */

/* The dying-wb fallback: cgroup_writeback_by_id() found no live wb and asked for a dying
 * one. A wb back means the flush reaches the dying cgroup's inodes. */
SEC("fexit/wb_get_lookup_dying")
int BPF_PROG(wbid_lookup_dying, struct backing_dev_info *bdi, struct cgroup_subsys_state *css,
	     struct bdi_writeback *ret)
{
	total_add(ret ? WBG_T_LOOKUP_DYING_FOUND : WBG_T_LOOKUP_DYING_NONE, 1);
	return 0;
}

/* The separate bdev flush: a foreign block device's page cache written back on its own
 * (the name differs between the patch's versions). */
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

/* Whether the foreign folio is a block device's page cache tells the separate
 * bdev flush's case apart on any kernel; dev says whether the kernel took its own path
 * for it (a kernel with the code but not the path shows dev 0 here). */
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

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WBG_STATS_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct wbg_cgroup_stats);
} cgroup_stats SEC(".maps");

/* The symptom: a writer sleeping in balance_dirty_pages(). The classic
 * tracepoint's record has the pause in ms already (tp_btf's argument is in
 * jiffies, and HZ is not known here) and the writer wb's cgroup. It fires
 * without a sleep too (pause <= 0), which is not counted. */
/* A classic tracepoint's record is the kernel's, not vmlinux.h's: its
 * fields move and change width between releases (7.x widened the
 * writeback events' inode numbers to u64 and moved balance_dirty_pages'
 * cgroup_ino). CORE_READ_INT reads a field at the running kernel's offset,
 * size and signedness (libbpf's field relocations), where BPF_CORE_READ
 * would read vmlinux.h's size at the new offset. */
#define CORE_READ_INT(s, field) BPF_CORE_READ_BITFIELD_PROBED(s, field)

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

static __always_inline int life_event(struct cgroup *cgrp, const char *path, __u32 kind)
{
	struct wbg_ring_event *e = bpf_ringbuf_reserve(&event_ring, sizeof(*e), 0);

	if (!e) {
		/* ring full: counted; inotify still reports the removal */
		total_add(WBG_T_LIFE_LOST, 1);
		return 0;
	}
	e->kind = kind;
	e->cgroup_id = BPF_CORE_READ(cgrp, kn, id);
	e->dev = 0;
	e->ino = e->dirtier = 0;
	e->level = BPF_CORE_READ(cgrp, level);
	e->root = BPF_CORE_READ(cgrp, root, hierarchy_id);
	bpf_probe_read_kernel_str(e->path, sizeof(e->path), path);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(life_rmdir, struct cgroup *cgrp, const char *path)
{
	return life_event(cgrp, path, WBG_LIFE_RMDIR);
}

/* Released: the last css of the cgroup (a dying memcg included) is gone, so
 * its per-cgroup series can go too once they were reported. */
SEC("tp_btf/cgroup_release")
int BPF_PROG(life_release, struct cgroup *cgrp, const char *path)
{
	release_inodes(BPF_CORE_READ(cgrp, kn, id));
	return life_event(cgrp, path, WBG_LIFE_RELEASE);
}
