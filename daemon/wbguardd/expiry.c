/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bpf-programs.h"
#include "containers.h"
#include "cgroup-util.h"
#include "expiry.h"
#include "flush-pool.h"
#include "handover.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "metrics.h"
#include "runtime-state.h"

#define SYSCTL_CHECK_USEC (5ULL * 1000 * 1000) /* /proc/sys cannot be watched */
#define RESOLVE_RETRY_USEC (500ULL * 1000)
#define RESOLVE_RETRIES 4
#define BOOST_HOLDER "boost"

struct pod {
	uint64_t id;
	char *path;
	char holder[160]; /* its name as a holder of the sysctl: path and id, as paths repeat */
	struct manager *m;
	struct wbg_policy policy;
	bool has_policy;
	bool holding;       /* global: holds the sysctl */
	unsigned pending;   /* expiry flush jobs in the pool */
	bool dirty_pending; /* dirtied again while its flush ran */
	unsigned retries;
	sd_event_source *timer; /* the expiry, or a retry of the policy lookup */
};

static struct pod *find_pod(struct manager *m, uint64_t id)
{
	struct pod key = { .id = id }, **p = tfind(&key, &m->pods, cmp_leading_u64);

	return p ? *p : NULL;
}

static void pod_free(void *p)
{
	struct pod *pod = p;

	sd_event_source_disable_unref(pod->timer);
	free(pod->path);
	free(pod);
}

static int on_sysctl_check(sd_event_source *s, uint64_t usec, void *userdata);

/* While the sysctl is lowered, look for the admin's changes now and then;
 * otherwise no timer at all. */
static void sysctl_changed(struct manager *m)
{
	if (!m->sysctl.lowered) {
		m->sysctl_check_source = sd_event_source_disable_unref(m->sysctl_check_source);
		return;
	}
	if (!m->sysctl_check_source &&
	    sd_event_add_time_relative(m->event, &m->sysctl_check_source, CLOCK_MONOTONIC, SYSCTL_CHECK_USEC,
				       100 * 1000, on_sysctl_check, m) < 0)
		log_warning("Cannot arm the sysctl check: an admin's change is noticed at the next change of ours");
}

static int on_sysctl_check(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	m->sysctl_check_source = sd_event_source_disable_unref(m->sysctl_check_source);
	(void)sysctl_keeper_check(&m->sysctl);
	sysctl_changed(m);
	return 0;
}

static void hold(struct manager *m, const char *id, unsigned cs)
{
	if (m->sysctl_ok)
		(void)sysctl_keeper_hold(&m->sysctl, id, cs);
	sysctl_changed(m);
}

static void release(struct manager *m, const char *id)
{
	if (m->sysctl_ok)
		(void)sysctl_keeper_release(&m->sysctl, id);
	sysctl_changed(m);
}

int expiry_start(struct manager *m)
{
	int r = sysctl_keeper_open(&m->sysctl, m->cfg.proc_sys, m->cfg.state_dir);

	/* Without the sysctl the rest still runs: per-pod expiry needs none. */
	m->sysctl_ok = r >= 0;
	if (r < 0)
		log_warning("No %s: the global expiry mechanism and the handover boost are off", WBG_SYSCTL_NAME);
	sysctl_changed(m);
	return 0;
}

void expiry_stop(struct manager *m)
{
	m->sysctl_check_source = sd_event_source_disable_unref(m->sysctl_check_source);
	m->boost_source = sd_event_source_disable_unref(m->boost_source);
	if (m->sysctl_ok)
		(void)sysctl_keeper_restore(&m->sysctl);
	tdestroy(m->pods, pod_free);
	m->pods = NULL;
	m->n_pods[0] = m->n_pods[1] = 0;
}

static void arm_timer(struct pod *pod, uint64_t usec, sd_event_time_handler_t cb)
{
	pod->timer = sd_event_source_disable_unref(pod->timer);
	if (sd_event_add_time_relative(pod->m->event, &pod->timer, CLOCK_MONOTONIC, usec, 10 * 1000, cb, pod) < 0)
		log_warning("Cannot arm a per-pod expiry timer: the kernel's expiry applies to that pod");
}

static uint64_t expiry_usec(const struct pod *pod)
{
	return (uint64_t)pod->policy.expire_cs * 10 * 1000;
}

static void resolve(struct manager *m, struct pod *pod);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct pod *pod = userdata;

	pod->timer = sd_event_source_disable_unref(pod->timer);
	resolve(pod->m, pod);
	return 0;
}

static int on_expiry(sd_event_source *s, uint64_t usec, void *userdata);

static void start_policy(struct manager *m, struct pod *pod)
{
	uint64_t dirty = 0;

	pod->has_policy = true;
	m->n_pods[pod->policy.mech]++;
	log_info("%s: dirty expiry %u.%02u s, %s, from %s", pod->path, pod->policy.expire_cs / 100,
		 pod->policy.expire_cs % 100, wbg_expiry_mech_to_string(pod->policy.mech), pod->policy.source);
	if (pod->policy.mech == WBG_EXPIRY_GLOBAL) {
		if (!m->sysctl_ok) {
			m->expiry_unsupported++;
			log_warning("%s: the global expiry mechanism needs %s, which is not readable", pod->path,
				    WBG_SYSCTL_NAME);
			return;
		}
		pod->holding = true;
		hold(m, pod->holder, pod->policy.expire_cs);
		return;
	}
	if (!m->bpf || wbg_bpf_expiry_arm(m->bpf, pod->id) < 0) {
		m->expiry_unsupported++;
		log_warning("%s: per-pod expiry needs the BPF programs that record what each cgroup dirtied; "
			    "it has none",
			    pod->path);
		return;
	}
	/* What it dirtied before it was armed (a container writes as soon as
	 * it starts, its runtime's state may come later): due one expiry from
	 * now. */
	if (cg_read_keyed_u64(m->cfg.cgroup_root, pod->path, "memory.stat", "file_dirty", &dirty) >= 0 && dirty > 0)
		arm_timer(pod, expiry_usec(pod), on_expiry);
}

/* Whether any runtime keeps containers here: hosts without one never wait
 * for a runtime's state. */
static bool runtimes_present(const char *const *dirs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (access(dirs[i], F_OK) == 0)
			return true;
	return false;
}

static void resolve(struct manager *m, struct pod *pod)
{
	struct wbg_container_state st = { 0 };
	const struct wbg_cgroup *c = registry_find_id(&m->reg, pod->id);
	const struct wbg_container *reg;
	const char *const *dirs, *annotation = NULL;
	unsigned n_dirs;
	char err[256];
	int found;

	if (!c)
		return;
	/* A container registered through the API (the OCI hook) says it
	 * first; else its runtime's state on disk. */
	reg = containers_find(&m->containers, c->path);
	dirs = config_runtime_dirs(&m->cfg, &n_dirs);
	found = reg ? 1 : runtime_state_find(dirs, n_dirs, m->cfg.cgroup_root, c->path, &st);
	if (reg) {
		snprintf(st.id, sizeof(st.id), "%s", reg->id);
		snprintf(st.runtime, sizeof(st.runtime), "hook");
		annotation = reg->dirty_expire;
	} else if (found > 0)
		annotation = runtime_state_annotation(&st, WBG_EXPIRY_ANNOTATION);
	if (policy_resolve(&m->cfg, c->path, c->ident.unit, annotation, &pod->policy, err, sizeof(err)) > 0)
		start_policy(m, pod);
	else if (found == 0 && runtimes_present(dirs, n_dirs) && pod->retries++ < RESOLVE_RETRIES)
		/* Maybe a container whose runtime has not written its state
		 * yet (runc writes state.json after its init joined the
		 * cgroup): look again shortly. */
		arm_timer(pod, RESOLVE_RETRY_USEC, on_retry);
	if (err[0]) {
		m->expiry_policy_errors++;
		log_warning("%s (container %s, %s): %s%s", c->path, st.id, st.runtime, err,
			    pod->has_policy ? "" : "; the kernel's expiry applies");
	}
	runtime_state_done(&st);
	if (!pod->has_policy && !pod->timer) {
		/* nothing to do for it: not kept */
		tdelete(pod, &m->pods, cmp_leading_u64);
		pod_free(pod);
	}
}

void expiry_cgroup_populated(struct manager *m, const struct wbg_cgroup *c)
{
	struct pod *pod = find_pod(m, c->id);

	if (pod) {
		/* in use again: a global pod holds the sysctl again */
		if (pod->has_policy && pod->policy.mech == WBG_EXPIRY_GLOBAL && !pod->holding && m->sysctl_ok) {
			pod->holding = true;
			hold(m, pod->holder, pod->policy.expire_cs);
		}
		return;
	}
	if (!c->in_scope || !*c->path)
		return;
	pod = calloc(1, sizeof(*pod));
	if (!pod || !(pod->path = strdup(c->path))) {
		free(pod);
		log_oom();
		return;
	}
	pod->id = c->id;
	pod->m = m;
	snprintf(pod->holder, sizeof(pod->holder), "%.120s (cgroup %" PRIu64 ")", c->path, c->id);
	if (!tsearch(pod, &m->pods, cmp_leading_u64)) {
		pod_free(pod);
		log_oom();
		return;
	}
	resolve(m, pod);
}

void expiry_container_registered(struct manager *m, const struct wbg_cgroup *c)
{
	struct pod *pod = find_pod(m, c->id);

	if (!pod) {
		if (c->populated)
			expiry_cgroup_populated(m, c);
		return;
	}
	if (pod->has_policy)
		return; /* already decided; a container's annotations do not change */
	pod->timer = sd_event_source_disable_unref(pod->timer);
	resolve(m, pod);
}

void expiry_cgroup_emptied(struct manager *m, uint64_t cgroup_id)
{
	struct pod *pod = find_pod(m, cgroup_id);

	/* Not live any more: its request no longer counts. (Per-pod timers
	 * stay: what it left dirty is still due.) */
	if (pod && pod->holding) {
		pod->holding = false;
		release(m, pod->holder);
	}
}

void expiry_cgroup_gone(struct manager *m, uint64_t cgroup_id)
{
	struct pod *pod = find_pod(m, cgroup_id);

	if (!pod)
		return;
	if (pod->has_policy)
		m->n_pods[pod->policy.mech]--;
	if (pod->holding)
		release(m, pod->holder);
	if (m->bpf)
		(void)wbg_bpf_expiry_forget(m->bpf, cgroup_id);
	tdelete(pod, &m->pods, cmp_leading_u64);
	pod_free(pod);
}

/* The pod's data is due: start writing back its own inodes (the same plan
 * as a handover's, from what BPF recorded it dirtied, but no block devices'
 * page cache, which other pods share; syncfs only where inodes cannot be
 * opened by handle). */
static int on_expiry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct pod *pod = userdata;
	struct manager *m = pod->m;
	struct wbg_config cfg = m->cfg; /* shallow: read only */
	struct wbg_plan plan = { 0 };
	int r;

	pod->timer = sd_event_source_disable_unref(pod->timer);
	/* Re-armed first: what the pod dirties from now on starts the next
	 * round, even while this one runs. */
	(void)wbg_bpf_expiry_arm(m->bpf, pod->id);
	cfg.inode_flush = WBG_INODE_FLUSH_ON;
	cfg.flush_bdev = false;
	r = handover_plan(pod->id, &cfg, &m->mounts, &m->bdevs, m->bpf, &plan);
	if (r < 0) {
		log_warning_errno(r, "%s: cannot plan its expiry writeback", pod->path);
		return 0;
	}
	for (size_t i = 0; i < plan.n; i++) {
		if (plan.t[i].kind != FLUSH_FS)
			continue;
		if (plan_target_submit(m->pool, &plan.t[i], FLUSH_MODE_EXPIRY, pod->id) < 0) {
			log_oom();
			break;
		}
		pod->pending++;
	}
	log_debug("%s: expiry writeback, %u target%s", pod->path, pod->pending, pod->pending == 1 ? "" : "s");
	plan_free(&plan);
	return 0;
}

void expiry_dirty_event(struct manager *m, uint64_t cgroup_id)
{
	struct pod *pod = find_pod(m, cgroup_id);

	if (!pod || !pod->has_policy || pod->policy.mech != WBG_EXPIRY_PER_POD)
		return;
	if (pod->pending)
		pod->dirty_pending = true; /* its round starts when this one ends */
	else if (!pod->timer)
		arm_timer(pod, expiry_usec(pod), on_expiry);
}

void expiry_job_done(struct manager *m, const struct flush_job *j)
{
	for (size_t i = 0; i < j->n_pods; i++) {
		struct pod *pod = find_pod(m, j->pods[i]);
		uint64_t dirty = 0;

		if (!pod || !pod->pending || --pod->pending)
			continue;
		m->expiry_flushes++;
		log_debug("%s: expiry writeback done (%s%" PRIu64 " inodes, result %d)", pod->path,
			  j->fell_back ? "fell back to syncfs, " : "", j->stats.inodes_synced, j->result);
		/* Dirtied again meanwhile, or still dirty: another round, one
		 * expiry from now. Clean: no timer until BPF says otherwise. */
		if (pod->dirty_pending ||
		    (cg_read_keyed_u64(m->cfg.cgroup_root, pod->path, "memory.stat", "file_dirty", &dirty) >= 0 &&
		     dirty > 0))
			arm_timer(pod, expiry_usec(pod), on_expiry);
		pod->dirty_pending = false;
	}
}

static int on_boost_end(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	m->boost_source = sd_event_source_disable_unref(m->boost_source);
	log_info("Handover boost over");
	release(m, BOOST_HOLDER);
	return 0;
}

void expiry_handover_ended(struct manager *m, const struct wbg_handover *h)
{
	bool clean;

	/* Interrupted: wbguardd is stopping, and stopping ends with the
	 * admin's value and no holder (the next start redoes the flush). */
	if (!m->cfg.boost_cs || !m->sysctl_ok || m->dying_wb == WBG_VERDICT_ACTIVE ||
	    h->outcome == WBG_OUTCOME_INTERRUPTED || h->not_own)
		return;
	clean = (h->outcome == WBG_OUTCOME_FLUSHED || h->outcome == WBG_OUTCOME_CLEAN || h->outcome == WBG_OUTCOME_DRAINED ||
		 h->outcome == WBG_OUTCOME_CHILDREN || (h->outcome == WBG_OUTCOME_DISABLED && m->cfg.flush)) &&
		h->verify != 0;
	if (clean)
		return;
	m->boosts++;
	log_info("Handover %" PRIu64 " of %s did not end cleanly (%s): %s = %u for %" PRIu64 " s", h->id, h->path,
		 h->verify == 0 ? "its dying wb is still dirty" : wbg_outcome_to_string(h->outcome), WBG_SYSCTL_NAME,
		 m->cfg.boost_cs, m->cfg.boost_window_usec / 1000000);
	hold(m, BOOST_HOLDER, m->cfg.boost_cs);
	/* a later removal extends the window */
	m->boost_source = sd_event_source_disable_unref(m->boost_source);
	if (sd_event_add_time_relative(m->event, &m->boost_source, CLOCK_MONOTONIC, m->cfg.boost_window_usec,
				       100 * 1000, on_boost_end, m) < 0) {
		/* a boost that could not end is no boost */
		log_warning("Cannot arm the boost's end; not boosting");
		release(m, BOOST_HOLDER);
	}
}

void expiry_metrics(FILE *f, const struct manager *m)
{
	unsigned cur = 0;

	if (m->sysctl_ok) {
		metric_family(f, "wbguard_dirty_expire_seconds", "gauge",
			      "vm.dirty_expire_centisecs now, and the admin's value wbguardd restores.");
		if (sysctl_keeper_read(&m->sysctl, &cur) >= 0)
			fprintf(f, "wbguard_dirty_expire_seconds{value=\"current\"} %.2f\n", cur / 100.0);
		fprintf(f, "wbguard_dirty_expire_seconds{value=\"original\"} %.2f\n", m->sysctl.original / 100.0);
	}
	metric_value(f, "wbguard_sysctl_lowered", "gauge",
		     "1 while wbguardd holds vm.dirty_expire_centisecs below the admin's value.", m->sysctl.lowered);
	metric_value(f, "wbguard_sysctl_holders", "gauge", "Pods and boosts holding the sysctl lowered.",
		     (double)m->sysctl.n_holders);
	metric_counter(f, "wbguard_sysctl_changes_total", "Writes of a lowered value.", m->sysctl.changes);
	metric_counter(f, "wbguard_sysctl_restores_total",
		       "Writes of the admin's value back (including after a crash, at start).", m->sysctl.restores);
	metric_counter(f, "wbguard_sysctl_admin_changes_total",
		       "Changes by someone else while lowered, adopted as the admin's value.", m->sysctl.admin_changes);
	metric_counter(f, "wbguard_sysctl_errors_total",
		       "Failed writes of the sysctl or its state file (read-only /proc/sys, full disk).",
		       m->sysctl.errors);
	metric_family(f, "wbguard_expiry_pods", "gauge", "Pods with a dirty expiry policy, by mechanism.");
	fprintf(f, "wbguard_expiry_pods{mechanism=\"per-pod\"} %zu\n", m->n_pods[WBG_EXPIRY_PER_POD]);
	fprintf(f, "wbguard_expiry_pods{mechanism=\"global\"} %zu\n", m->n_pods[WBG_EXPIRY_GLOBAL]);
	metric_counter(f, "wbguard_expiry_writebacks_total", "Per-pod expiry writebacks run.", m->expiry_flushes);
	metric_counter(f, "wbguard_expiry_policy_errors_total",
		       "Invalid wbguard.io/dirty-expire annotations (the next source decided).", m->expiry_policy_errors);
	metric_counter(f, "wbguard_expiry_unsupported_total",
		       "Policies that could not be applied here (no BPF for per-pod, no sysctl for global).",
		       m->expiry_unsupported);
	metric_counter(f, "wbguard_expiry_boosts_total",
		       "Handovers that did not end cleanly and lowered the sysctl for the boost window.", m->boosts);
}
