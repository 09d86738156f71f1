/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's world (lifecycle.h): plans from the mount table,
 * the block devices and what BPF recorded; the flush pool; the scratch
 * cycle; memory.stat and wb_stats; the state dir; the record, the journal
 * and the boost; the API's replies; the one timer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-journal.h>

#include "bpf-programs.h"
#include "cgroup-util.h"
#include "escape.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "pending.h"
#include "timer-util.h"
#include "wbstats.h"

/* The BPF object, if it knows what each cgroup dirtied. */
static const struct wbg_bpf *dirtied_bpf(const struct manager *m)
{
	return wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED ? m->bpf : NULL;
}

static uint64_t op_now(void *userdata)
{
	return manager_now_usec(userdata);
}

static void op_schedule(void *userdata, uint64_t usec)
{
	struct manager *m = userdata;

	timer_arm_by(m->lifecycle_source, usec);
}

static int op_plan(void *userdata, uint64_t cgroup_id, const struct wbg_cgroup *c, bool inodes, struct wbg_plan *ret)
{
	struct manager *m = userdata;
	struct wbg_config cfg = m->cfg; /* shallow: read only */

	/* Without BPF, what a cgroup may have written is what its processes'
	 * mount namespace showed */
	if (!dirtied_bpf(m) && c && c->n_ns_devs)
		return handover_plan_devs(&m->cfg, &m->host.mounts, c->ns_devs, c->n_ns_devs, ret);
	if (inodes)
		cfg.inode_flush = WBG_INODE_FLUSH_ON; /* the plan takes the inode sets */
	return handover_plan(cgroup_id, &cfg, &m->host.mounts, &m->host.bdevs, dirtied_bpf(m), ret);
}

static int op_plan_mounts(void *userdata, struct wbg_plan *ret)
{
	struct manager *m = userdata;

	return handover_plan_mounts(&m->cfg, &m->host.mounts, ret);
}

static int op_plan_recorded(void *userdata, const dev_t *devs, const bool *bdev, size_t n, struct wbg_plan *ret)
{
	struct manager *m = userdata;

	return handover_plan_recorded(&m->cfg, &m->host.mounts, &m->host.bdevs, devs, bdev, n, ret);
}

static int op_submit(void *userdata, const struct wbg_plan_target *t, enum flush_purpose purpose, uint64_t id)
{
	struct manager *m = userdata;

	return plan_target_submit(m->pool, t, purpose, id);
}

static void op_timed_out(void *userdata)
{
	struct manager *m = userdata;

	if (flush_pool_reap_stuck(m->pool, m->cfg.timeout_usec))
		log_warning("A flush worker is stuck in the kernel (a filesystem that does not answer); started another");
}

static int op_read_dirty(void *userdata, const char *path, uint64_t *ret_dirty, uint64_t *ret_writeback)
{
	struct manager *m = userdata;

	return cg_read_dirty(m->cfg.cgroup_root, path, ret_dirty, ret_writeback);
}

static bool op_has_children(void *userdata, const char *path)
{
	struct manager *m = userdata;
	char p[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	snprintf(p, sizeof(p), "%s/%s", m->cfg.cgroup_root, path);
	d = opendir(p);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.')
			return true;
	return false;
}

static int op_cleanup(void *userdata)
{
	struct manager *m = userdata;

	if (!m->cfg.scratch_cycle || !m->scratch.path)
		return -EOPNOTSUPP;
	return scratch_cycle(&m->scratch, ++m->cleanup_seq);
}

static int op_dirty_cgroups(void *userdata, uint64_t **ret, size_t *ret_n)
{
	struct manager *m = userdata;

	return wbstats_dirty_cgroups(m->debugfs, ret, ret_n);
}

static int op_arm(void *userdata, uint64_t cgroup_id, bool stall_only)
{
	struct manager *m = userdata;

	return wbg_bpf_dying_arm(m->bpf, cgroup_id, stall_only);
}

static void op_disarm(void *userdata, uint64_t cgroup_id)
{
	struct manager *m = userdata;

	(void)wbg_bpf_dying_forget(m->bpf, cgroup_id);
	(void)wbg_bpf_stall_forget(m->bpf, cgroup_id); /* its next stall is news again */
}

static void op_forget(void *userdata, uint64_t cgroup_id)
{
	struct manager *m = userdata;

	if (dirtied_bpf(m))
		(void)wbg_bpf_forget_cgroup(m->bpf, cgroup_id);
}

static int op_pending_save(void *userdata, const struct wbg_handover *h, const struct wbg_plan *plan)
{
	struct manager *m = userdata;
	_cleanup_free_ dev_t *devs = calloc(plan->n + 1, sizeof(*devs));
	_cleanup_free_ bool *bdev = calloc(plan->n + 1, sizeof(*bdev));
	int r;

	if (!devs || !bdev)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n; i++) {
		devs[i] = plan->t[i].dev;
		bdev[i] = plan->t[i].kind == FLUSH_BDEV;
	}
	r = pending_save(m->cfg.state_dir, h->id, h->path, h->cgroup_id, devs, bdev, plan->n);
	if (r < 0) /* costs only the redo after a crash */
		log_debug_errno(r, "Cannot record handover %" PRIu64 " as pending in %s", h->id, m->cfg.state_dir);
	return r;
}

static void op_pending_drop(void *userdata, uint64_t id)
{
	struct manager *m = userdata;

	pending_drop(m->cfg.state_dir, id);
}

/* Structured fields for the journal: the handover, its cgroup and, when the
 * hook registered it, its pod. */
static void log_handover(struct manager *m, const struct wbg_handover *h, const char *json)
{
	int level = h->outcome == WBG_OUTCOME_FAILED || h->outcome == WBG_OUTCOME_TIMEOUT ? LOG_WARNING : LOG_INFO;
	struct wbg_container_names n;
	_cleanup_free_ char *path = NULL, *msg = NULL;

	if (level > log_get_max_level())
		return;
	if (!log_to_journal()) {
		log_full_errno(level, 0, "handover %" PRIu64 " %s: %s", h->id, h->path, json);
		return;
	}
	containers_names(&m->containers, h->path, &n);
	/* as log_internal does: one line whatever the name holds */
	path = escape_dup(h->path);
	msg = escape_dup(json);
	if (!path || !msg) {
		log_oom();
		return;
	}
	(void)sd_journal_send("MESSAGE=handover %" PRIu64 " %s: %s", h->id, path, msg, "PRIORITY=%d", level,
			      "SYSLOG_IDENTIFIER=wbguardd", "WBGUARD_HANDOVER_ID=%" PRIu64, h->id,
			      "WBGUARD_CGROUP=/%s", path, "WBGUARD_OUTCOME=%s", wbg_outcome_to_string(h->outcome),
			      "WBGUARD_TRIGGER=%s", wbg_trigger_to_string(h->trigger), "WBGUARD_POD=%s", n.pod,
			      "WBGUARD_NAMESPACE=%s", n.namespace, "WBGUARD_CONTAINER=%s", n.container,
			      "WBGUARD_CONTAINER_ID=%s", n.container_id, NULL);
}

#define VERDICT_AT_END_USEC (10ULL * 1000 * 1000)

static void op_ended(void *userdata, const struct wbg_handover *h, const char *json)
{
	struct manager *m = userdata;

	expiry_handover_ended(&m->expiry, h);
	log_handover(m, h, json);
	records_append(&m->records, json);
	/* new evidence comes with use; at most every 10 s, never by a reader */
	if (op_now(m) - m->verdicts.checked_usec > VERDICT_AT_END_USEC)
		manager_refresh_verdict(m);
	metrics_textfile_update(m, false);
}

static void op_reply(void *userdata, void *call, uint64_t id, const char *outcome, const char *reason)
{
	int r = sd_bus_reply_method_return(call, "tss", id, outcome, reason ? reason : "");

	if (r < 0)
		log_debug_errno(r, "Cannot reply to FlushCgroup (the caller left?)");
}

static void *op_call_ref(void *userdata, void *call)
{
	return sd_bus_message_ref(call);
}

static void op_call_unref(void *userdata, void *call)
{
	sd_bus_message_unref(call);
}

static const struct wbg_clock_ops clock_ops = {
	.now = op_now,
	.schedule = op_schedule,
};

static const struct wbg_flusher_ops flusher_ops = {
	.plan = op_plan,
	.plan_mounts = op_plan_mounts,
	.plan_recorded = op_plan_recorded,
	.submit = op_submit,
	.timed_out = op_timed_out,
	.pending_save = op_pending_save,
	.pending_drop = op_pending_drop,
};

static const struct wbg_kernel_ops kernel_ops = {
	.read_dirty = op_read_dirty,
	.has_children = op_has_children,
	.cleanup = op_cleanup,
	.dirty_cgroups = op_dirty_cgroups,
	.arm = op_arm,
	.disarm = op_disarm,
	.forget = op_forget,
};

static const struct wbg_audience_ops audience_ops = {
	.ended = op_ended,
	.reply = op_reply,
	.call_ref = op_call_ref,
	.call_unref = op_call_unref,
};

const struct wbg_lifecycle_ops manager_lifecycle_ops = {
	.clock = &clock_ops,
	.flusher = &flusher_ops,
	.kernel = &kernel_ops,
	.audience = &audience_ops,
};


/* Without wb_stats a wb counts as drained after the kernel's own expiry
 * and one writeback interval, with room to spare. */
static uint64_t drain_after_usec(const char *proc_sys)
{
	_cleanup_free_ char *e = NULL, *w = NULL;
	char p[PATH_MAX];
	unsigned expire = 3000, writeback = 500;

	snprintf(p, sizeof(p), "%s/vm/dirty_expire_centisecs", proc_sys);
	if (read_small_file_at(AT_FDCWD, p, 64, &e) < 0 || sscanf(e, "%u", &expire) != 1)
		expire = 3000;
	snprintf(p, sizeof(p), "%s/vm/dirty_writeback_centisecs", proc_sys);
	if (read_small_file_at(AT_FDCWD, p, 64, &w) < 0 || sscanf(w, "%u", &writeback) != 1)
		writeback = 500;
	return (uint64_t)(expire + writeback) * 10000 * 3 / 2;
}

struct wbg_lifecycle_params manager_lifecycle_params(const struct manager *m)
{
	return (struct wbg_lifecycle_params){
		.timeout_usec = m->cfg.timeout_usec,
		.flush = m->cfg.flush,
		/* removals are watched only where BPF can see the evidence
		 * and what each cgroup dirtied */
		.on_evidence = m->cfg.flush_mode == WBG_FLUSH_ON_EVIDENCE && wbg_bpf_dying_supported(m->bpf) &&
			       dirtied_bpf(m),
		.at_exit = m->cfg.flush_mode == WBG_FLUSH_EXIT,
		.watch = {
			.max = m->cfg.watch_max,
			.max_per_tenant = m->cfg.watch_max_per_tenant,
			.drain_after_usec = drain_after_usec(m->cfg.proc_sys),
			.max_age_usec = m->cfg.watch_max_age_usec,
			.reflush_usec = m->cfg.reflush_usec,
			.evidence_per_sec = m->cfg.evidence_per_sec,
		},
	};
}
