/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "wbg-kernel.h"
#include "wbg-base.h"
#include "plan.h"

bool fstype_has_writeback(const char *fstype)
{
	static const char *const none[] = { "tmpfs",   "ramfs",	 "proc",       "sysfs",	    "cgroup",
					    "cgroup2", "devtmpfs", "devpts",   "mqueue",    "bpf",
					    "tracefs", "debugfs",  "securityfs", "pstore",  "hugetlbfs",
					    "configfs", "fusectl", "autofs",   "binfmt_misc", "efivarfs",
					    "nsfs",    "rpc_pipefs", "squashfs", "iso9660", "9p" };

	for (size_t i = 0; i < ELEMENTSOF(none); i++)
		if (strcmp(fstype, none[i]) == 0)
			return false;
	return true;
}

unsigned plan_passes_for(const struct wbg_plan_params *pp, const char *fstype)
{
	for (size_t i = 0; i < pp->n_passes; i++)
		if (strcmp(pp->passes[i].fstype, fstype) == 0)
			return pp->passes[i].passes;
	return pp->default_passes;
}

bool plan_fstype_excluded(const struct wbg_plan_params *pp, const char *fstype)
{
	const char *p = pp->exclude_fstypes ? pp->exclude_fstypes : "";
	char glob[512]; /* the whole key's bound (conf.h): any one glob fits */

	while (*p) {
		size_t n = strcspn(p, " \t");

		if (n && n < sizeof(glob)) {
			memcpy(glob, p, n);
			glob[n] = 0;
			if (fnmatch(glob, fstype, 0) == 0)
				return true;
		}
		p += n;
		p += strspn(p, " \t");
	}
	return false;
}

static int add_target(struct wbg_plan *p, dev_t dev, enum flush_kind kind, const struct wbg_mount *m,
		      const char *node, const struct wbg_plan_params *pp, struct wbg_plan_target **ret)
{
	struct wbg_plan_target *t;

	*ret = NULL;
	if (kind == FLUSH_FS && m && plan_fstype_excluded(pp, m->fstype)) {
		p->n_excluded++; /* [flush] exclude_fstypes: a syncfs that may never return */
		return 0;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].dev == dev && p->t[i].kind == kind) {
			*ret = &p->t[i];
			return 0;
		}
	t = realloc(p->t, (p->n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	p->t = t;
	t = &p->t[p->n++];
	*t = (struct wbg_plan_target){ .dev = dev, .kind = kind };
	if (m) {
		snprintf(t->fstype, sizeof(t->fstype), "%s", m->fstype);
		snprintf(t->mount, sizeof(t->mount), "%s", m->target);
		t->passes = plan_passes_for(pp, m->fstype);
	} else if (node)
		snprintf(t->mount, sizeof(t->mount), "%s", node);
	*ret = t;
	return 0;
}


static int plan_from_bpf(uint64_t cgroup_id, const struct wbg_plan_params *pp, const struct wbg_mounts *mounts,
			 const struct blockdevs *bdevs, const struct wbg_bpf *bpf, struct wbg_plan *p)
{
	_cleanup_free_ struct wbg_dirtied_dev *devs = NULL;
	_cleanup_free_ struct wbg_inode_key *inodes = NULL;
	size_t n_devs = 0, n_inodes = 0, evicted = 0;
	bool complete = false, overflow = false, found = false;
	int r;

	r = wbg_bpf_cgroup_devs(bpf, cgroup_id, &devs, &n_devs, &overflow, &found);
	if (r < 0)
		return r;
	p->own_set_missing = !found;
	p->set_maybe_evicted = !found && wbg_bpf_devsets_may_have_evicted(bpf);
	if (pp->inodes) {
		r = wbg_bpf_cgroup_inodes(bpf, cgroup_id, &inodes, &n_inodes, &complete, &evicted);
		if (r < 0)
			return r;
	}
	p->inodes_incomplete = !complete;
	p->inodes_evicted = evicted;
	for (size_t i = 0; i < n_devs; i++) {
		dev_t dev = makedev(WBG_KDEV_MAJOR(devs[i].dev), WBG_KDEV_MINOR(devs[i].dev));
		struct wbg_plan_target *t;

		if (devs[i].kind == WBG_DEV_BDEV) {
			if (!pp->block_devices)
				continue;
			const struct wbg_mount *m = mountinfo_find_dev(mounts, dev);
			const char *node = blockdevs_node(bdevs, dev);

			/* A mounted filesystem's device: syncfs writes its
			 * mapping too (sync_filesystem() ends in
			 * sync_blockdev()), and needs no device node, which a
			 * container may not open. */
			if (m && fstype_has_writeback(m->fstype))
				r = add_target(p, dev, FLUSH_FS, m, NULL, pp, &t);
			else if (!node)
				continue; /* no node for it (gone): nothing to open */
			else
				r = add_target(p, dev, FLUSH_BDEV, NULL, node, pp, &t);
		} else {
			const struct wbg_mount *m = mountinfo_find_dev(mounts, dev);

			/* Not mounted in our namespace (any more): nothing we can
			 * open. Pseudo filesystems have no writeback. */
			if (!m || !fstype_has_writeback(m->fstype))
				continue;
			r = add_target(p, dev, FLUSH_FS, m, NULL, pp, &t);
			if (r < 0)
				return r;
			if (!t)
				continue; /* excluded */
			/* auto means syncfs: measured (daemon-bench, ext4, 6.12),
			 * fsync by handle plus the syncfs pass that must follow
			 * it wrote the same bytes in twice the time. */
			if (complete && flush_fs_has_handles(m->fstype) && pp->inodes) {
				size_t k = 0;

				t->use_inodes = true;
				for (size_t j = 0; j < n_inodes; j++)
					k += inodes[j].dev == devs[i].dev;
				t->inodes = calloc(k ? k : 1, sizeof(*t->inodes));
				if (!t->inodes)
					return -ENOMEM;
				for (size_t j = 0; j < n_inodes; j++)
					if (inodes[j].dev == devs[i].dev)
						t->inodes[t->n_inodes++] = inodes[j];
			}
		}
		if (r < 0)
			return r;
	}
	/* It dirtied more devices than its set holds (a tenant writing to many
	 * filesystems): a complete inode set still names every filesystem it
	 * wrote; only without one may the rest be any filesystem. */
	if (overflow && !pp->inodes) {
		r = wbg_bpf_cgroup_inodes(bpf, cgroup_id, &inodes, &n_inodes, &complete, &evicted);
		if (r < 0)
			return r;
	}
	if (overflow && complete) {
		for (size_t j = 0; j < n_inodes; j++) {
			dev_t dev = makedev(WBG_KDEV_MAJOR(inodes[j].dev), WBG_KDEV_MINOR(inodes[j].dev));
			const struct wbg_mount *m = mountinfo_find_dev(mounts, dev);
			struct wbg_plan_target *t;

			if (!m || !fstype_has_writeback(m->fstype))
				continue;
			r = add_target(p, dev, FLUSH_FS, m, NULL, pp, &t);
			if (r < 0)
				return r;
		}
	} else if (overflow) {
		r = handover_plan_mounts(pp, mounts, p);
		if (r < 0)
			return r;
	}
	p->source = !overflow ? "bpf" : complete ? "bpf+inodes" : "bpf+mounts";
	return 0;
}

/* Without BPF we cannot know what the cgroup wrote: every filesystem with
 * writeback. */
int handover_plan_mounts(const struct wbg_plan_params *pp, const struct wbg_mounts *mounts, struct wbg_plan *p)
{
	for (size_t i = 0; i < mounts->n; i++) {
		const struct wbg_mount *m = &mounts->v[i];
		struct wbg_plan_target *t;
		int r;

		/* overlayfs writes land in its upper filesystem, which has a
		 * target of its own; btrfs has anonymous device numbers and
		 * counts. */
		if (!fstype_has_writeback(m->fstype) || strcmp(m->fstype, "overlay") == 0 ||
		    mountinfo_find_dev(mounts, m->dev) != m)
			continue;
		r = add_target(p, m->dev, FLUSH_FS, m, NULL, pp, &t);
		if (r < 0)
			return r;
	}
	p->source = "mounts";
	return 0;
}

/* Every filesystem whose bdi is dev (the disk a stall or a wb_stats line
 * names: its partitions', its own, none where it is a partition itself). */
static int add_bdi_filesystems(struct wbg_plan *p, const struct wbg_plan_params *pp, const struct wbg_mounts *mounts,
			       dev_t bdi)
{
	struct wbg_plan_target *t;
	int r;

	for (size_t i = 0; i < mounts->n; i++) {
		const struct wbg_mount *m = &mounts->v[i];

		/* each filesystem once, through the mount of its root */
		if (m->bdi != bdi || major(m->dev) == 0 || !fstype_has_writeback(m->fstype) ||
		    mountinfo_find_dev(mounts, m->dev) != m)
			continue;
		r = add_target(p, m->dev, FLUSH_FS, m, NULL, pp, &t);
		if (r < 0)
			return r;
	}
	return 0;
}

int handover_plan_recorded(const struct wbg_plan_params *pp, const struct wbg_mounts *mounts, const struct blockdevs *bdevs,
			   const dev_t *devs, const bool *bdev, size_t n, struct wbg_plan *ret)
{
	struct wbg_plan p = { 0 };
	struct wbg_plan_target *t;
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct wbg_mount *m = mountinfo_find_dev(mounts, devs[i]);
		const char *node = bdev[i] ? blockdevs_node(bdevs, devs[i]) : NULL;

		if (m && fstype_has_writeback(m->fstype))
			r = add_target(&p, devs[i], FLUSH_FS, m, NULL, pp, &t);
		else if (node)
			r = add_target(&p, devs[i], FLUSH_BDEV, NULL, node, pp, &t);
		/* a bdi's device (a stall's, wb_stats'): the filesystems on its
		 * partitions; else unmounted or detached since: nothing left to
		 * write */
		if (r >= 0 && !bdev[i])
			r = add_bdi_filesystems(&p, pp, mounts, devs[i]);
	}
	if (r < 0) {
		plan_free(&p);
		return r;
	}
	p.source = "recorded";
	*ret = p;
	return 0;
}

int handover_plan_devs(const struct wbg_plan_params *pp, const struct wbg_mounts *mounts, const dev_t *ns_devs,
		       size_t n_ns_devs, struct wbg_plan *ret)
{
	struct wbg_plan p = { 0 };
	int r;

	for (size_t i = 0; i < n_ns_devs; i++) {
		const struct wbg_mount *m = mountinfo_find_dev(mounts, ns_devs[i]);
		struct wbg_plan_target *t;

		if (!m || !fstype_has_writeback(m->fstype) || strcmp(m->fstype, "overlay") == 0)
			continue; /* not reachable from our namespace */
		r = add_target(&p, m->dev, FLUSH_FS, m, NULL, pp, &t);
		if (r < 0) {
			plan_free(&p);
			return r;
		}
	}
	p.source = "mountns";
	*ret = p;
	return 0;
}

int mountns_devs(const char *proc, pid_t pid, dev_t **ret, unsigned *ret_n)
{
	struct wbg_mounts m;
	char path[128];
	dev_t *v;
	unsigned n = 0;
	int r;

	snprintf(path, sizeof(path), "%s/%d/mountinfo", proc, (int)pid);
	r = mountinfo_read(path, &m);
	if (r < 0)
		return r;
	v = calloc(m.n ? m.n : 1, sizeof(*v));
	if (!v) {
		mountinfo_free(&m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m.n; i++) {
		bool dup = false;

		if (!fstype_has_writeback(m.v[i].fstype))
			continue;
		for (unsigned k = 0; k < n && !dup; k++)
			dup = v[k] == m.v[i].dev;
		if (!dup)
			v[n++] = m.v[i].dev;
	}
	mountinfo_free(&m);
	*ret = v;
	*ret_n = n;
	return 0;
}

int handover_plan(uint64_t cgroup_id, const struct wbg_plan_params *pp, const struct wbg_mounts *mounts,
		  const struct blockdevs *bdevs, const struct wbg_bpf *bpf, struct wbg_plan *ret)
{
	struct wbg_plan p = { 0 };
	int r = bpf ? plan_from_bpf(cgroup_id, pp, mounts, bdevs, bpf, &p) : handover_plan_mounts(pp, mounts, &p);

	if (r < 0) {
		plan_free(&p);
		return r;
	}
	*ret = p;
	return 0;
}

int plan_target_submit(struct flush_pool *pool, const struct wbg_plan_target *t, enum flush_purpose purpose, uint64_t id)
{
	struct flush_job *j = flush_job_new(t->dev, t->kind, t->fstype, t->mount);
	int r;

	if (!j)
		return -ENOMEM;
	j->purpose = purpose;
	j->passes = t->passes;
	j->use_inodes = t->use_inodes;
	r = purpose == FLUSH_FOR_EXPIRY ? flush_job_add_pod(j, id) : flush_job_add_waiter(j, id);
	if (r == 0 && t->use_inodes)
		r = flush_job_add_inodes(j, t->inodes, t->n_inodes);
	if (r == 0)
		r = flush_pool_submit(pool, j);
	if (r < 0)
		flush_job_free(j);
	return r;
}

int plan_add_inode(struct wbg_plan *p, const struct wbg_inode_key *k)
{
	dev_t dev = makedev(WBG_KDEV_MAJOR(k->dev), WBG_KDEV_MINOR(k->dev));

	for (size_t i = 0; i < p->n; i++) {
		struct wbg_plan_target *t = &p->t[i];
		struct wbg_inode_key *v;

		if (t->dev != dev || !t->use_inodes)
			continue;
		for (size_t j = 0; j < t->n_inodes; j++)
			if (t->inodes[j].ino == k->ino && t->inodes[j].dev == k->dev)
				return 0;
		v = realloc(t->inodes, (t->n_inodes + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->inodes = v;
		t->inodes[t->n_inodes++] = *k;
		return 1;
	}
	return 0;
}

void plan_free(struct wbg_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->t[i].inodes);
	free(p->t);
	*p = (struct wbg_plan){ 0 };
}

