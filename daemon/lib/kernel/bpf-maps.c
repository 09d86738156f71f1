/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading and arming the BPF maps: counters, per-cgroup series, what each
 * cgroup dirtied, the event ring, the evidence and expiry arming. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf-internal.h"
#include "wbg-base.h"

int wbg_bpf_attached(const struct wbg_bpf *b, const char *prog)
{
	for (unsigned i = 0; i < b->n_progs; i++)
		if (strcmp(b->progs[i].name, prog) == 0)
			return b->progs[i].link != NULL;
	return -ENOENT;
}

int wbg_bpf_foreach_program(const struct wbg_bpf *b, wbg_prog_cb cb, void *userdata)
{
	for (unsigned i = 0; b && i < b->n_progs; i++) {
		int r = cb(b->progs[i].name, b->progs[i].link != NULL, b->progs[i].why, userdata);

		if (r < 0)
			return r;
	}
	return 0;
}

int wbg_bpf_totals(const struct wbg_bpf *b, uint64_t ret[_WBG_TOTAL_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(b->skel->maps.totals);
	_cleanup_free_ uint64_t *v = NULL;
	uint64_t t[_WBG_TOTAL_MAX] = { 0 };

	if (ncpu < 0)
		return ncpu;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (__u32 k = 0; k < _WBG_TOTAL_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, v) < 0)
			return -errno;
		for (int c = 0; c < ncpu; c++)
			t[k] += v[c];
	}
	memcpy(ret, t, sizeof(t));
	return 0;
}

int wbg_bpf_drop_cgroup_series(const struct wbg_bpf *b, uint64_t cgroup_id)
{
	(void)bpf_map_delete_elem(bpf_map__fd(b->skel->maps.cgroup_stats), &cgroup_id);
	(void)bpf_map_delete_elem(bpf_map__fd(b->skel->maps.wbid_results), &cgroup_id);
	return 0;
}

const char *wbg_wbid_result_to_string(unsigned r)
{
	static const char *const names[_WBG_WBID_RESULT_MAX] = { "ok", "enoent", "other" };

	return r < _WBG_WBID_RESULT_MAX ? names[r] : "?";
}

const char *wbg_target_state_to_string(uint32_t s)
{
	switch (s) {
	case WBG_TARGET_LIVE:
		return "live";
	case WBG_TARGET_DYING:
		return "dying";
	default:
		return "unknown";
	}
}

/* Every (key, value) of a hash map, in batches where the kernel has them. */
typedef int (*map_cb)(const void *key, const void *value, void *userdata);

static int map_scan(int fd, size_t ksize, size_t vsize, map_cb cb, void *userdata)
{
	enum { BATCH = 1024 };
	_cleanup_free_ char *keys = malloc(ksize * BATCH), *vals = malloc(vsize * BATCH), *prev = malloc(ksize),
			    *next = malloc(ksize);
	__u64 in = 0, out = 0;
	bool first = true;
	int r;

	if (!keys || !vals || !prev || !next)
		return -ENOMEM;
	for (;;) {
		__u32 count = BATCH;

		r = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &count, NULL);
		if (r < 0 && errno != ENOENT) {
			if (!first || (errno != EINVAL && errno != ENOTSUP /* = EOPNOTSUPP */))
				return -errno;
			break; /* no batch ops: walk key by key below */
		}
		for (__u32 i = 0; i < count; i++) {
			int k = cb(keys + i * ksize, vals + i * vsize, userdata);

			if (k < 0)
				return k;
		}
		if (r < 0) /* ENOENT: that was the last batch */
			return 0;
		in = out;
		first = false;
	}
	for (void *p = NULL; bpf_map_get_next_key(fd, p, next) == 0; p = prev) {
		memcpy(prev, next, ksize);
		if (bpf_map_lookup_elem(fd, prev, vals) < 0)
			continue;
		r = cb(prev, vals, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

struct wbid_walk {
	wbg_wbid_cb cb;
	void *userdata;
};

static int wbid_cb(const void *key, const void *value, void *userdata)
{
	struct wbid_walk *w = userdata;

	return w->cb(*(const __u64 *)key, value, w->userdata);
}

int wbg_bpf_foreach_wbid(const struct wbg_bpf *b, wbg_wbid_cb cb, void *userdata)
{
	struct wbid_walk w = { cb, userdata };

	return map_scan(bpf_map__fd(b->skel->maps.wbid_results), sizeof(__u64), sizeof(struct wbg_wbid_counts), wbid_cb,
			&w);
}

/* The inode keys of one cgroup, gathered by a map scan. */
int wbg_bpf_cgroup_devs(const struct wbg_bpf *b, uint64_t cgroup_id, struct wbg_dirtied_dev **ret, size_t *ret_n,
			bool *ret_overflow, bool *ret_found)
{
	struct wbg_cgroup_devs v;
	struct wbg_dirtied_dev *d;
	bool found = true;
	size_t n = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.cgroup_devs), &cgroup_id, &v) < 0) {
		if (errno != ENOENT)
			return -errno;
		v = (struct wbg_cgroup_devs){ 0 }; /* dirtied nothing, or evicted (the caller asks which may be) */
		found = false;
	}
	d = calloc(WBG_DEVS_PER_CGROUP, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < WBG_DEVS_PER_CGROUP; i++)
		if (v.slot[i].tag)
			d[n++] = (struct wbg_dirtied_dev){ .dev = WBG_DEV_TAG_DEV(v.slot[i].tag),
							   .kind = WBG_DEV_TAG_KIND(v.slot[i].tag),
							   .dirtied = v.slot[i].dirtied,
							   .last_ns = v.slot[i].last_ns };
	*ret = d;
	*ret_n = n;
	*ret_overflow = v.overflow != 0;
	*ret_found = found;
	return 0;
}

static uint64_t devset_inserts(const struct wbg_bpf *b)
{
	uint64_t t[_WBG_TOTAL_MAX] = { 0 };

	return wbg_bpf_totals(b, t) < 0 ? 0 : t[WBG_T_DEVSET_INSERTS];
}

bool wbg_bpf_devsets_may_have_evicted(const struct wbg_bpf *b)
{
	uint64_t ins = devset_inserts(b), del = b->devset_deletes;

	/* half the bound: the kernel's LRU keeps per-CPU free lists and may
	 * start evicting before it is full */
	return ins > del && ins - del > bpf_map__max_entries(b->skel->maps.cgroup_devs) / 2;
}

int wbg_bpf_devsets_evicted(const struct wbg_bpf *b, uint64_t *ret)
{
	int fd = bpf_map__fd(b->skel->maps.cgroup_devs);
	uint64_t key, next, held = 0, ins = devset_inserts(b), del = b->devset_deletes;
	void *prev = NULL;

	if (!wbg_bpf_devsets_may_have_evicted(b)) {
		*ret = 0;
		return 0;
	}
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		held++;
		key = next;
		prev = &key;
	}
	*ret = ins > del + held ? ins - del - held : 0;
	return 0;
}

int wbg_bpf_cgroup_inodes(const struct wbg_bpf *b, uint64_t cgroup_id, struct wbg_inode_key **ret, size_t *ret_n,
			  bool *ret_complete, size_t *ret_evicted)
{
	struct wbg_cgroup_inodes ci = { 0 };
	struct wbg_inode_key *v = NULL;
	int fd = bpf_map__fd(b->skel->maps.inode_slots);
	size_t n = 0;
	bool found;

	/* O(the cgroup's inodes): its slots 0..count-1, not a scan of every
	 * cgroup's records (65,536 lookups, 4.5 ms on the loop) */
	found = bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.cgroup_inodes), &cgroup_id, &ci) == 0;
	if (found && ci.count) {
		v = calloc(ci.count, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (__u32 i = 0; i < ci.count; i++) {
			struct wbg_slot_key sk = { .cgroup_id = cgroup_id, .idx = i };

			if (bpf_map_lookup_elem(fd, &sk, &v[n]) == 0 && v[n].cgroup_id == cgroup_id)
				n++;
		}
	}
	/* Incomplete when nothing says how many there were (the count's
	 * entry evicted or never made), when the per-cgroup bound was hit, or
	 * when the LRU evicted some of what was counted (or two CPUs took one
	 * slot). */
	*ret_complete = found && !ci.overflow && n >= ci.count;
	*ret_evicted = found && n < ci.count ? ci.count - n : 0;
	*ret = v;
	*ret_n = n;
	return 0;
}

/* O(1) whatever the node's size: the device set and the inode count go;
 * the cgroup's entries in dirtied_inodes are left to that map's LRU (cgroup
 * ids are never reused, and nothing touches them again, so they are the
 * first evicted). */
int wbg_bpf_forget_cgroup(struct wbg_bpf *b, uint64_t cgroup_id)
{
	int ci_fd = bpf_map__fd(b->skel->maps.cgroup_inodes), t_fd = bpf_map__fd(b->skel->maps.tenant_inodes);
	struct wbg_cgroup_inodes ci;
	__u64 held;

	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.cgroup_devs), &cgroup_id) == 0)
		b->devset_deletes++;
	/* Its records no longer count against its tenant. Only the one who
	 * deletes the entry gives the count back (the release program does
	 * the same), so it is given back once. A writer of the same tenant
	 * adding at this instant may lose one count here: the share is a
	 * bound, not a ledger. */
	if (bpf_map_lookup_elem(ci_fd, &cgroup_id, &ci) == 0 && bpf_map_delete_elem(ci_fd, &cgroup_id) == 0 &&
	    bpf_map_lookup_elem(t_fd, &ci.tenant, &held) == 0) {
		__u64 after = held > ci.count ? held - ci.count : 0;
		__u64 back = wbg_pooled_part(held, ci.count, b->skel->rodata->inodes_floor);

		/* the pool gets back the part above the tenant's floor */
		if (b->skel->rodata->inodes_pool && back)
			__atomic_fetch_sub(&b->skel->bss->inodes_pooled,
					   back < b->skel->bss->inodes_pooled ? back : b->skel->bss->inodes_pooled,
					   __ATOMIC_RELAXED);
		(void)bpf_map_update_elem(t_fd, &ci.tenant, &after, BPF_EXIST);
	}
	return 0;
}

int wbg_bpf_tenant_set(struct wbg_bpf *b, uint64_t cgroup_id, uint64_t tenant_id)
{
	if (!b || !(b->groups & WBG_BPF_DIRTIED))
		return 0;
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.cgroup_tenant), &cgroup_id, &tenant_id, BPF_ANY) < 0) {
		int r = -errno;

		if (r == -E2BIG)
			b->tenant_map_full++;
		return r;
	}
	return 0;
}

uint64_t wbg_bpf_tenant_map_full(const struct wbg_bpf *b)
{
	return b ? b->tenant_map_full : 0;
}

void wbg_bpf_tenant_forget(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (b && (b->groups & WBG_BPF_DIRTIED))
		(void)bpf_map_delete_elem(bpf_map__fd(b->skel->maps.cgroup_tenant), &cgroup_id);
}

struct stats_walk {
	wbg_stats_cb cb;
	void *userdata;
};

static int stats_cb(const void *key, const void *value, void *userdata)
{
	const struct stats_walk *w = userdata;

	return w->cb(*(const __u64 *)key, value, w->userdata);
}

int wbg_bpf_foreach_cgroup_stats(const struct wbg_bpf *b, wbg_stats_cb cb, void *userdata)
{
	struct stats_walk w = { cb, userdata };

	return map_scan(bpf_map__fd(b->skel->maps.cgroup_stats), sizeof(__u64), sizeof(struct wbg_cgroup_stats),
			stats_cb, &w);
}

/* An event carries its head and its kind's part only (wbguard.h): one
 * shorter than its kind's is dropped, so that the reader never looks past
 * it. So is a removal whose path has no NUL within its field: the reader
 * takes it as a string, and would read on past the event (the BPF side
 * always ends it; the ring's memory is read-only here, so it cannot be
 * ended for the reader). */
int wbg_bpf_ring_sample(void *ctx, void *data, size_t size)
{
	struct wbg_bpf *b = ctx;
	const struct wbg_ring_event *e = data;
	__u32 need;

	if (size < WBG_RING_HEAD_SIZE)
		return 0;
	need = wbg_ring_event_size(e->kind);
	if (size < need)
		return 0;
	if (need == WBG_RING_EVENT_SIZE(removal) && !memchr(e->removal.path, 0, sizeof(e->removal.path)))
		return 0;
	return b->ring_cb(e, b->ring_userdata);
}

int wbg_bpf_ring_open(struct wbg_bpf *b, wbg_ring_event_cb cb, void *userdata)
{
	if (!(b->groups & WBG_BPF_LIFE))
		return -EOPNOTSUPP;
	b->ring_cb = cb;
	b->ring_userdata = userdata;
	b->event_rb = ring_buffer__new(bpf_map__fd(b->skel->maps.event_ring), wbg_bpf_ring_sample, b, NULL);
	return b->event_rb ? 0 : -errno;
}

int wbg_bpf_ring_fd(const struct wbg_bpf *b)
{
	return b->event_rb ? ring_buffer__epoll_fd(b->event_rb) : -EBADF;
}

int wbg_bpf_ring_consume(struct wbg_bpf *b)
{
	return b->event_rb ? ring_buffer__consume(b->event_rb) : 0;
}

int wbg_bpf_evidence(const struct wbg_bpf *b, struct wbg_evidence *e)
{
	uint64_t t[_WBG_TOTAL_MAX] = { 0 };
	int r = wbg_bpf_totals(b, t);

	if (r < 0)
		return r;
	e->ok_to_dying = t[WBG_T_WBID + 0 * 3 + WBG_TARGET_DYING];
	e->enoent_to_dying = t[WBG_T_WBID + 1 * 3 + WBG_TARGET_DYING];
	e->lookup_dying_found = t[WBG_T_LOOKUP_DYING_FOUND];
	e->bdev_flushes = t[WBG_T_BDEV_FLUSH];
	e->bdev_dirty_own_path = t[WBG_T_FOREIGN_DIRTY_BDEV];
	e->bdev_dirty_shared_path = t[WBG_T_FOREIGN_DIRTY_BDEV_SHARED];
	return 0;
}

int btf_struct_has_member(const char *type, const char *member)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	const struct btf_member *mb;
	const struct btf_type *t;
	int id, r = 0;

	if (!vmlinux)
		return -errno;
	id = btf__find_by_name_kind(vmlinux, type, BTF_KIND_STRUCT);
	if (id < 0) {
		btf__free(vmlinux);
		return -ENOENT;
	}
	t = btf__type_by_id(vmlinux, id);
	mb = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, mb++)
		if (strcmp(btf__name_by_offset(vmlinux, mb->name_off), member) == 0)
			r = 1;
	btf__free(vmlinux);
	return r;
}

int wbg_bpf_expiry_arm(struct wbg_bpf *b, uint64_t cgroup_id)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 armed = WBG_EXPIRY_ARMED;
	__u32 zero = 0;
	_cleanup_free_ void *last = NULL;

	int r;

	if (!(b->groups & WBG_BPF_DIRTIED))
		return -EOPNOTSUPP;
	if (b->skel->bss->expiry_pods == 0) {
		r = wbg_bpf_set_on_demand(b, true);
		if (r < 0)
			return r;
	}
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.expiry_watch), &cgroup_id, &armed, BPF_NOEXIST) == 0)
		b->skel->bss->expiry_pods++;
	else if (errno != EEXIST ||
		 bpf_map_update_elem(bpf_map__fd(b->skel->maps.expiry_watch), &cgroup_id, &armed, BPF_EXIST) < 0) {
		r = -errno;
		if (b->skel->bss->expiry_pods == 0)
			(void)wbg_bpf_set_on_demand(b, false);
		return r;
	}
	/* The per-CPU "same inode as last time" shortcut would hide a writer
	 * that keeps appending to one file: forget it. */
	if (ncpu < 0)
		return ncpu;
	last = calloc(ncpu, 16 /* struct last_seen, 8-byte aligned per CPU */);
	if (!last)
		return -ENOMEM;
	(void)bpf_map_update_elem(bpf_map__fd(b->skel->maps.dirty_last), &zero, last, BPF_ANY);
	return 0;
}

int wbg_bpf_expiry_forget(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (!(b->groups & WBG_BPF_DIRTIED))
		return 0;
	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.expiry_watch), &cgroup_id) == 0) {
		if (--b->skel->bss->expiry_pods == 0)
			(void)wbg_bpf_set_on_demand(b, false);
		return 0;
	}
	return errno == ENOENT ? 0 : -errno;
}

bool wbg_bpf_dying_supported(const struct wbg_bpf *b)
{
	return b && (b->groups & WBG_BPF_LIFE) && b->event_rb &&
	       (wbg_bpf_attached(b, "path_fdirty") > 0 || wbg_bpf_attached(b, "path_fdirty_dev") > 0);
}

int wbg_bpf_dying_arm(struct wbg_bpf *b, uint64_t cgroup_id, bool stall_only)
{
	int fd = bpf_map__fd(b->skel->maps.dying_watch);
	/* without the -ENOENT program, a dirtying is the only sign there is */
	__u64 armed = stall_only && (b->groups & WBG_BPF_WBID) ? WBG_DYING_ARMED_STALL : WBG_DYING_ARMED;

	if (!wbg_bpf_dying_supported(b))
		return -EOPNOTSUPP;
	if (bpf_map_update_elem(fd, &cgroup_id, &armed, BPF_NOEXIST) == 0) {
		b->skel->bss->dying_watched++;
		return 0;
	}
	if (errno == EEXIST && bpf_map_update_elem(fd, &cgroup_id, &armed, BPF_EXIST) == 0)
		return 0;
	return -errno;
}

bool wbg_bpf_stall_supported(const struct wbg_bpf *b)
{
	return b && (b->groups & WBG_BPF_LIFE) && b->event_rb && (b->groups & WBG_BPF_WBID) &&
	       wbg_bpf_attached(b, "wbid_exit") > 0 && wbg_bpf_attached(b, "wbid_lookup") > 0;
}

void wbg_bpf_stall_enable(struct wbg_bpf *b, bool on)
{
	if (wbg_bpf_stall_supported(b))
		b->skel->bss->stall_events = on;
}

bool wbg_bpf_stall_enabled(const struct wbg_bpf *b)
{
	return wbg_bpf_stall_supported(b) && b->skel->bss->stall_events;
}

int wbg_bpf_stall_forget(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (!wbg_bpf_stall_supported(b))
		return 0;
	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.stall_reported), &cgroup_id) == 0)
		return 0;
	return errno == ENOENT ? 0 : -errno;
}

int wbg_bpf_dying_forget(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (!wbg_bpf_dying_supported(b))
		return 0;
	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.dying_watch), &cgroup_id) == 0) {
		b->skel->bss->dying_watched--;
		return 0;
	}
	return errno == ENOENT ? 0 : -errno;
}
