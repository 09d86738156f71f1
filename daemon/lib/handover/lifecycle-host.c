/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lifecycle's flusher and kernel on a real host (lifecycle-host.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "wbg-config.h"
#include "wbg-base.h"
#include "lifecycle-host.h"
#include "pending.h"
#include "wbg-flush.h"

/* The BPF object, if it knows what each cgroup dirtied. */
static const struct wbg_bpf *dirtied_bpf(const struct wbg_bpf *bpf)
{
	return wbg_bpf_groups(bpf) & WBG_BPF_DIRTIED ? bpf : NULL;
}

static int host_plan(void *userdata, uint64_t cgroup_id, const struct wbg_cgroup *c, bool inodes,
		     struct wbg_plan *ret)
{
	struct wbg_lifecycle_host *h = userdata;
	struct wbg_plan_params pp = config_plan_params(h->cfg);

	/* Without BPF, what a cgroup may have written is what its processes'
	 * mount namespace showed */
	if (!dirtied_bpf(h->bpf) && c && c->n_ns_devs)
		return handover_plan_devs(&pp, h->mounts, c->ns_devs, c->n_ns_devs, ret);
	if (inodes)
		pp.inodes = true; /* the plan takes the inode sets */
	return handover_plan(cgroup_id, &pp, h->mounts, h->bdevs, dirtied_bpf(h->bpf), ret);
}

static int host_plan_mounts(void *userdata, struct wbg_plan *ret)
{
	struct wbg_lifecycle_host *h = userdata;
	struct wbg_plan_params pp = config_plan_params(h->cfg);

	return handover_plan_mounts(&pp, h->mounts, ret);
}

static int host_plan_recorded(void *userdata, const dev_t *devs, const bool *bdev, size_t n, struct wbg_plan *ret)
{
	struct wbg_lifecycle_host *h = userdata;
	struct wbg_plan_params pp = config_plan_params(h->cfg);

	return handover_plan_recorded(&pp, h->mounts, h->bdevs, devs, bdev, n, ret);
}

static int host_submit(void *userdata, const struct wbg_plan_target *t, enum flush_purpose purpose, uint64_t id)
{
	struct wbg_lifecycle_host *h = userdata;

	if (!h->pool)
		return -EAGAIN;
	return plan_target_submit(h->pool, t, purpose, id);
}

static void host_timed_out(void *userdata)
{
	struct wbg_lifecycle_host *h = userdata;

	if (h->pool && flush_pool_reap_stuck(h->pool, h->cfg->timeout_usec))
		log_warning("A flush worker is stuck in the kernel (a filesystem that does not answer); started another");
}

static int host_pending_save(void *userdata, const struct wbg_handover *ho, const struct wbg_plan *plan)
{
	struct wbg_lifecycle_host *h = userdata;
	_cleanup_free_ dev_t *devs = calloc(plan->n + 1, sizeof(*devs));
	_cleanup_free_ bool *bdev = calloc(plan->n + 1, sizeof(*bdev));
	int r;

	if (!devs || !bdev)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n; i++) {
		devs[i] = plan->t[i].dev;
		bdev[i] = plan->t[i].kind == FLUSH_BDEV;
	}
	r = pending_save(h->cfg->state_dir, ho->id, ho->path, ho->cgroup_id, devs, bdev, plan->n);
	if (r < 0) /* costs only the redo after a crash */
		log_debug_errno(r, "Cannot record handover %" PRIu64 " as pending in %s", ho->id, h->cfg->state_dir);
	return r;
}

static void host_pending_drop(void *userdata, uint64_t id)
{
	struct wbg_lifecycle_host *h = userdata;

	pending_drop(h->cfg->state_dir, id);
}

const struct wbg_flusher_ops lifecycle_host_flusher_ops = {
	.plan = host_plan,
	.plan_mounts = host_plan_mounts,
	.plan_recorded = host_plan_recorded,
	.submit = host_submit,
	.timed_out = host_timed_out,
	.pending_save = host_pending_save,
	.pending_drop = host_pending_drop,
};

static int host_read_dirty(void *userdata, const char *path, uint64_t *ret_dirty, uint64_t *ret_writeback)
{
	struct wbg_lifecycle_host *h = userdata;

	return cg_read_dirty(h->cfg->cgroup_root, path, ret_dirty, ret_writeback);
}

static bool host_has_children(void *userdata, const char *path)
{
	struct wbg_lifecycle_host *h = userdata;
	char p[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	if (snprintf(p, sizeof(p), "%s/%s", h->cfg->cgroup_root, path) >= (int)sizeof(p))
		return false;
	d = opendir(p);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.')
			return true;
	return false;
}

static int host_cleanup(void *userdata)
{
	struct wbg_lifecycle_host *h = userdata;

	if (!h->cfg->scratch_cycle || !h->scratch || !h->scratch->path)
		return -EOPNOTSUPP;
	return scratch_cycle(h->scratch, ++h->cleanup_seq);
}

static int host_census(void *userdata, struct wbg_wb_census *ret)
{
	struct wbg_lifecycle_host *h = userdata;

	if (!h->debugfs)
		return -ENOENT;
	return wbstats_census(h->debugfs, ret);
}

static int host_arm(void *userdata, uint64_t cgroup_id, bool stall_only)
{
	struct wbg_lifecycle_host *h = userdata;

	return wbg_bpf_dying_arm(h->bpf, cgroup_id, stall_only);
}

static void host_disarm(void *userdata, uint64_t cgroup_id)
{
	struct wbg_lifecycle_host *h = userdata;

	(void)wbg_bpf_dying_forget(h->bpf, cgroup_id);
	(void)wbg_bpf_stall_forget(h->bpf, cgroup_id); /* its next stall is news again */
}

static void host_forget(void *userdata, uint64_t cgroup_id)
{
	struct wbg_lifecycle_host *h = userdata;

	if (dirtied_bpf(h->bpf))
		(void)wbg_bpf_forget_cgroup(h->bpf, cgroup_id);
}

const struct wbg_kernel_ops lifecycle_host_kernel_ops = {
	.read_dirty = host_read_dirty,
	.has_children = host_has_children,
	.cleanup = host_cleanup,
	.census = host_census,
	.arm = host_arm,
	.disarm = host_disarm,
	.forget = host_forget,
};

static unsigned read_centisecs(const char *proc_sys, const char *name, unsigned fallback)
{
	_cleanup_free_ char *s = NULL;
	char p[PATH_MAX];
	unsigned v;

	if (snprintf(p, sizeof(p), "%s/vm/%s", proc_sys, name) >= (int)sizeof(p) ||
	    read_small_file_at(AT_FDCWD, p, 64, &s) < 0 || sscanf(s, "%u", &v) != 1)
		return fallback;
	return v;
}

uint64_t lifecycle_drain_after_usec(const char *proc_sys)
{
	unsigned expire = read_centisecs(proc_sys, "dirty_expire_centisecs", 3000);
	unsigned writeback = read_centisecs(proc_sys, "dirty_writeback_centisecs", 500);

	return ((uint64_t)expire + writeback) * 10000 * 3 / 2;
}

struct wbg_lifecycle_params lifecycle_host_params(const struct wbg_config *cfg, const struct wbg_bpf *bpf)
{
	return (struct wbg_lifecycle_params){
		.timeout_usec = cfg->timeout_usec,
		.flush = cfg->flush,
		/* removals are watched only where BPF can see the evidence
		 * and what each cgroup dirtied */
		.on_evidence = cfg->flush_mode == WBG_FLUSH_ON_EVIDENCE && wbg_bpf_dying_supported(bpf) &&
			       dirtied_bpf(bpf),
		.at_exit = cfg->flush_mode == WBG_FLUSH_EXIT,
		.watch = {
			.max = cfg->watch_max,
			.max_per_tenant = cfg->watch_max_per_tenant,
			.drain_after_usec = lifecycle_drain_after_usec(cfg->proc_sys),
			.max_age_usec = cfg->watch_max_age_usec,
			.reflush_usec = cfg->reflush_usec,
			.evidence_per_sec = cfg->evidence_per_sec,
		},
	};
}
