// SPDX-License-Identifier: GPL-2.0
/*
 * A cgroup's end, from the kernel: its rmdir (for removals too quick for
 * inotify to tie to a cgroup id) and its release, each one event on the
 * ring with the cgroup's path. At the release the cgroup's inode records
 * are counted out of its tenant's share.
 */
#include "wbguard-bpf.h"

/* A released cgroup's inode count goes, and its tenant gets its share back
 * (user space forgets the ones it handed over earlier, the same way): what
 * dirtied.bpf.c's note_inode() counted in. */
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

static __always_inline int life_event(struct cgroup *cgrp, const char *path, __u32 kind)
{
	struct wbg_ring_event *e = ring_reserve(WBG_RING_EVENT_SIZE(removal), kind, BPF_CORE_READ(cgrp, kn, id),
						BPF_CORE_READ(cgrp, level), BPF_CORE_READ(cgrp, root, hierarchy_id));

	if (!e) {
		/* ring full: counted; inotify still reports the removal */
		total_add(WBG_T_LIFE_LOST, 1);
		return 0;
	}
	bpf_probe_read_kernel_str(e->removal.path, sizeof(e->removal.path), path);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(life_rmdir, struct cgroup *cgrp, const char *path)
{
	return life_event(cgrp, path, WBG_RING_RMDIR);
}

/* Released: the last css of the cgroup (a dying memcg included) is gone, so
 * its per-cgroup series can go too once they were reported. */
SEC("tp_btf/cgroup_release")
int BPF_PROG(life_release, struct cgroup *cgrp, const char *path)
{
	release_inodes(BPF_CORE_READ(cgrp, kn, id));
	return life_event(cgrp, path, WBG_RING_RELEASE);
}
