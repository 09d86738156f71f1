/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sources' news, to the parts it concerns: the cgroupfs watch (a cgroup
 * tracked, emptied, in use again, removed), the BPF ring (removals only the
 * kernel saw, releases, dirtying of armed cgroups, evidence) and systemd
 * (jobs and stops, mapped to the tracked cgroups). */
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "wbg-base.h"
#include "manager.h"

/* Without BPF, what a populated cgroup may write is what its processes'
 * mount namespace shows: read it now, while they are alive. */
static void note_mount_namespace(struct manager *m, struct wbg_cgroup *c)
{
	_cleanup_free_ char *procs = NULL;
	char p[PATH_MAX];
	dev_t *devs;
	unsigned n;
	int pid;

	if ((wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED) || !*c->path)
		return;
	snprintf(p, sizeof(p), "%s/%s/cgroup.procs", m->cfg.cgroup_root, c->path);
	if (read_small_file_at(AT_FDCWD, p, 4096, &procs) < 0 || sscanf(procs, "%d", &pid) != 1)
		return; /* empty, or gone: normal */
	if (mountns_devs("/proc", pid, &devs, &n) < 0)
		return;
	free(c->ns_devs);
	c->ns_devs = devs;
	c->n_ns_devs = n;
}

/* Every removal in the v2 hierarchy, from the kernel, with its id, and the
 * ring's other news (releases, dirtying of armed cgroups, evidence). Most
 * removals are inotify's news too; this catches the ones created and
 * removed before inotify's events about them could be acted on. */
int manager_on_ring_event(const struct wbg_ring_event *e, void *userdata)
{
	struct manager *m = userdata;
	struct wbg_cgroup tmp = { .id = e->cgroup_id, .wd_dir = -1, .wd_events = -1, .removed = true };
	char path[WBG_RING_PATH_MAX];
	const char *owner = NULL;
	bool ancestor_only;

	if (e->root != 0)
		return 0;
	switch (e->kind) {
	case WBG_RING_DIRTY:
		expiry_dirty_event(&m->expiry, e->cgroup_id);
		return 0;
	case WBG_RING_RELEASE:
		series_released(&m->series, e->cgroup_id);
		lifecycle_released(&m->lifecycle, e->cgroup_id);
		return 0;
	case WBG_RING_EVIDENCE: {
		const typeof(e->evidence) *ev = &e->evidence;
		struct wbg_inode_key k = { .cgroup_id = e->cgroup_id, .ino = ev->ino, .dev = ev->dev, .gen = ev->gen };

		/* level 1: the -ENOENT sign, which names no inode */
		if (lifecycle_evidence(&m->lifecycle, e->cgroup_id, e->level == 1 ? NULL : &k, &owner) < 0)
			log_debug("Foreign dirtying of a dying wb of cgroup %" PRIu64 " no longer watched",
				  (uint64_t)e->cgroup_id);
		/* debug: a tenant's writes decide how often these come (its
		 * handover's record counts them) */
		else if (e->level == 1)
			log_debug("Evidence: a foreign flush for cgroup %" PRIu64 " to the dying wb of %s got -ENOENT",
				 (uint64_t)ev->dirtier, owner ? owner : "a removed cgroup");
		else
			log_debug("Evidence: cgroup %" PRIu64 " dirtied inode %" PRIu64
				 " on %u:%u, still on the dying wb of %s",
				 (uint64_t)ev->dirtier, (uint64_t)ev->ino, WBG_KDEV_MAJOR(ev->dev), WBG_KDEV_MINOR(ev->dev),
				 owner ? owner : "a removed cgroup");
		return 0;
	}
	case WBG_RING_STALL: {
		/* the path, where the departed cgroups still have it; the bdi
		 * by its name, "MAJOR:MINOR" or btrfs' "btrfs-N" */
		const char *p = series_cgroup_path(&m->series, e->cgroup_id);
		char name[WBG_RING_BDI_MAX];
		dev_t bdi = 0;

		snprintf(name, sizeof(name), "%.*s", (int)sizeof(e->stall.bdi), e->stall.bdi);
		if (bdi_name_dev(host_named_bdis(&m->host), name, &bdi) < 0)
			log_debug("Stall of cgroup %" PRIu64 " on bdi '%s', which names no mounted filesystem",
				  (uint64_t)e->cgroup_id, name);
		(void)lifecycle_stall(&m->lifecycle, e->cgroup_id, p ? p : "", bdi,
				      !p || !*p || (watch_in_scope(&m->watch, p, &ancestor_only) && !ancestor_only));
		return 0;
	}
	default:
		break;
	}
	expiry_cgroup_gone(&m->expiry, e->cgroup_id);
	snprintf(path, sizeof(path), "%s", e->removal.path[0] == '/' ? e->removal.path + 1 : e->removal.path);
	series_departed(&m->series, e->cgroup_id, path);
	/* every rmdir: the lifecycle merges it with inotify's reports */
	tmp.path = path;
	tmp.in_scope = watch_in_scope(&m->watch, path, &ancestor_only) && !ancestor_only;
	cgroup_identity_parse(path, &tmp.ident);
	(void)lifecycle_event(&m->lifecycle, &tmp, WBG_TRIGGER_RMDIR_BPF);
	return 0;
}

static void on_tracked(struct wbg_watch *w, struct wbg_cgroup *c)
{
	struct manager *m = w->userdata;

	if (c->populated) {
		note_mount_namespace(m, c);
		expiry_cgroup_populated(&m->expiry, c->id, c->in_scope && *c->path);
	}
	/* whose share of the inode records its writes take */
	(void)wbg_bpf_tenant_set(m->bpf, c->id, watch_tenant_id(w, c));
	/* a container registered before its cgroup was seen: its names now
	 * stay until the cgroup departs */
	containers_set_tracked(&m->containers, c->path);
	log_debug("Tracking %s (id %" PRIu64 "%s)", c->path, c->id, c->populated ? ", populated" : "");
}

static void on_populated(struct wbg_watch *w, struct wbg_cgroup *c, bool populated)
{
	struct manager *m = w->userdata;

	if (!populated) {
		expiry_cgroup_emptied(&m->expiry, c->id);
		(void)lifecycle_event(&m->lifecycle, c, WBG_TRIGGER_POPULATED_0);
		return;
	}
	note_mount_namespace(m, c);
	expiry_cgroup_populated(&m->expiry, c->id, c->in_scope && *c->path);
	lifecycle_repopulated(&m->lifecycle, c);
}

static void on_removed(struct wbg_watch *w, struct wbg_cgroup *c, bool by_rescan)
{
	struct manager *m = w->userdata;

	series_departed(&m->series, c->id, c->path);
	expiry_cgroup_gone(&m->expiry, c->id);
	(void)lifecycle_event(&m->lifecycle, c, by_rescan ? WBG_TRIGGER_RESCAN : WBG_TRIGGER_REMOVED);
	wbg_bpf_tenant_forget(m->bpf, c->id);
}

const struct wbg_watch_ops manager_watch_ops = {
	.tracked = on_tracked,
	.populated = on_populated,
	.removed = on_removed,
};

/* systemd's news (watch-systemd.h), mapped to the tracked cgroups: the
 * cgroups named after the unit (an index, not a walk of every cgroup), the
 * system manager's over a user manager's of the same name (the shorter
 * path). */
static struct wbg_cgroup *find_unit(struct manager *m, const char *unit)
{
	struct wbg_cgroup *found = NULL;

	for (struct wbg_cgroup *c = registry_find_unit(&m->reg, unit); c; c = c->unit_next)
		if (c->in_scope && !c->removed && (!found || strlen(c->path) < strlen(found->path)))
			found = c;
	return found;
}

static void on_job(void *userdata, const char *unit)
{
	struct manager *m = userdata;
	struct wbg_cgroup *c = find_unit(m, unit);

	if (c)
		(void)lifecycle_event(&m->lifecycle, c, WBG_TRIGGER_STOP_JOB);
}

static void on_job_type(void *userdata, const char *unit, const char *type)
{
	struct manager *m = userdata;
	struct wbg_cgroup *c = find_unit(m, unit);

	if (c)
		lifecycle_job_type(&m->lifecycle, c, type);
}

static void on_stopping(void *userdata, const char *cgroup_path)
{
	struct manager *m = userdata;
	struct wbg_cgroup *c;

	while (*cgroup_path == '/')
		cgroup_path++;
	c = registry_find_path(&m->reg, cgroup_path);
	if (!c) {
		log_debug("Stop of %s: not a tracked cgroup", cgroup_path);
		return;
	}
	(void)lifecycle_event(&m->lifecycle, c, WBG_TRIGGER_STOP_JOB);
}

const struct wbg_systemd_ops manager_systemd_ops = {
	.job = on_job,
	.job_type = on_job_type,
	.stopping = on_stopping,
	.connected = manager_bus_connected,
};

