/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <json-c/json.h>

#include "bpf-programs.h"
#include "containers.h"
#include "cgroup-util.h"
#include "expiry.h"
#include "flush-pool.h"
#include "handover.h"
#include "host.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "registry.h"
#include "runtime-state.h"
#include "verdict.h"

#define SYSCTL_CHECK_USEC (5ULL * 1000 * 1000) /* /proc/sys cannot be watched */
#define RESOLVE_RETRY_USEC (500ULL * 1000)
#define RESOLVE_RETRIES 4
#define BOOST_HOLDER "boost"

struct expiry_cgroup {
	uint64_t id;
	char *path;
	char holder[160]; /* its name as a holder of the sysctl: path and id, as paths repeat */
	struct wbg_expiry *e;
	struct wbg_policy policy;
	bool has_policy;
	bool holding;       /* global: holds the sysctl */
	unsigned pending;   /* expiry flush jobs in the pool */
	bool dirty_pending; /* dirtied again while its flush ran */
	unsigned retries;
	sd_event_source *timer; /* the expiry, or a retry of the policy lookup */
};

static struct expiry_cgroup *find_entry(struct wbg_expiry *e, uint64_t id)
{
	struct expiry_cgroup key = { .id = id }, **p = tfind(&key, &e->cgroups, cmp_leading_u64);

	return p ? *p : NULL;
}

static void entry_free(void *p)
{
	struct expiry_cgroup *ec = p;

	sd_event_source_disable_unref(ec->timer);
	free(ec->path);
	free(ec);
}

static int on_sysctl_check(sd_event_source *s, uint64_t usec, void *userdata);

/* While the sysctl is lowered, look for the admin's changes now and then;
 * otherwise no timer at all. */
static void sysctl_changed(struct wbg_expiry *e)
{
	if (!e->sysctl.lowered) {
		e->sysctl_check_source = sd_event_source_disable_unref(e->sysctl_check_source);
		return;
	}
	if (!e->sysctl_check_source &&
	    sd_event_add_time_relative(e->event, &e->sysctl_check_source, CLOCK_MONOTONIC, SYSCTL_CHECK_USEC,
				       100 * 1000, on_sysctl_check, e) < 0)
		log_warning("Cannot arm the sysctl check: an admin's change is noticed at the next change of ours");
}

static int on_sysctl_check(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_expiry *e = userdata;

	e->sysctl_check_source = sd_event_source_disable_unref(e->sysctl_check_source);
	(void)sysctl_keeper_check(&e->sysctl);
	sysctl_changed(e);
	return 0;
}

static void hold(struct wbg_expiry *e, const char *id, unsigned cs)
{
	if (e->sysctl_ok)
		(void)sysctl_keeper_hold(&e->sysctl, id, cs);
	sysctl_changed(e);
}

static void release(struct wbg_expiry *e, const char *id)
{
	if (e->sysctl_ok)
		(void)sysctl_keeper_release(&e->sysctl, id);
	sysctl_changed(e);
}

int expiry_start(struct wbg_expiry *e, const struct wbg_expiry_deps *deps)
{
	int r;

	*e = (struct wbg_expiry){ .event = deps->event,	  .cfg = deps->cfg,	      .bpf = deps->bpf,
				  .pool = deps->pool,	  .reg = deps->reg,	      .containers = deps->containers,
				  .host = deps->host,	  .verdicts = deps->verdicts };
	r = sysctl_keeper_open(&e->sysctl, e->cfg->proc_sys, e->cfg->state_dir);

	/* Without the sysctl the rest still runs: per-pod expiry needs none. */
	e->sysctl_ok = r >= 0;
	if (r < 0)
		log_warning("No %s: the global expiry mechanism and the handover boost are off", WBG_SYSCTL_NAME);
	sysctl_changed(e);
	return 0;
}

void expiry_stop(struct wbg_expiry *e)
{
	e->sysctl_check_source = sd_event_source_disable_unref(e->sysctl_check_source);
	e->boost_source = sd_event_source_disable_unref(e->boost_source);
	if (e->sysctl_ok)
		(void)sysctl_keeper_restore(&e->sysctl);
	tdestroy(e->cgroups, entry_free);
	e->cgroups = NULL;
	e->n_policies[0] = e->n_policies[1] = 0;
}

static void arm_timer(struct expiry_cgroup *ec, uint64_t usec, sd_event_time_handler_t cb)
{
	ec->timer = sd_event_source_disable_unref(ec->timer);
	if (sd_event_add_time_relative(ec->e->event, &ec->timer, CLOCK_MONOTONIC, usec, 10 * 1000, cb, ec) < 0)
		log_warning("Cannot arm a per-pod expiry timer: the kernel's expiry applies to that pod");
}

static uint64_t expiry_usec(const struct expiry_cgroup *ec)
{
	return (uint64_t)ec->policy.expire_cs * 10 * 1000;
}

static void resolve(struct wbg_expiry *e, struct expiry_cgroup *ec);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct expiry_cgroup *ec = userdata;

	ec->timer = sd_event_source_disable_unref(ec->timer);
	resolve(ec->e, ec);
	return 0;
}

static int on_expiry(sd_event_source *s, uint64_t usec, void *userdata);

static void start_policy(struct wbg_expiry *e, struct expiry_cgroup *ec)
{
	uint64_t dirty = 0;

	ec->has_policy = true;
	e->n_policies[ec->policy.mech]++;
	log_info("%s: dirty expiry %u.%02u s, %s, from %s", ec->path, ec->policy.expire_cs / 100,
		 ec->policy.expire_cs % 100, wbg_expiry_mech_to_string(ec->policy.mech), ec->policy.source);
	if (ec->policy.mech == WBG_EXPIRY_GLOBAL) {
		if (!e->sysctl_ok) {
			e->unsupported++;
			log_warning("%s: the global expiry mechanism needs %s, which is not readable", ec->path,
				    WBG_SYSCTL_NAME);
			return;
		}
		ec->holding = true;
		hold(e, ec->holder, ec->policy.expire_cs);
		return;
	}
	if (!e->bpf || wbg_bpf_expiry_arm(e->bpf, ec->id) < 0) {
		e->unsupported++;
		log_warning("%s: per-pod expiry needs the BPF programs that record what each cgroup dirtied; "
			    "it has none",
			    ec->path);
		return;
	}
	/* What it dirtied before it was armed (a container writes as soon as
	 * it starts, its runtime's state may come later): due one expiry from
	 * now. */
	if (cg_read_keyed_u64(e->cfg->cgroup_root, ec->path, "memory.stat", "file_dirty", &dirty) >= 0 && dirty > 0)
		arm_timer(ec, expiry_usec(ec), on_expiry);
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

/* A container no hook registered, found in its runtime's state (a runtime
 * without hooks: containerd's ctr, Docker): its names (the pod's, from the
 * CRI's annotations) and id go to the container table as the hook's would,
 * for the records, the journal and the metrics' labels. */
static void note_container(struct wbg_expiry *e, const char *path, const struct wbg_container_state *st)
{
	const char *keys[WBG_CONTAINER_ANNOTATIONS_MAX], *values[WBG_CONTAINER_ANNOTATIONS_MAX];
	size_t n = 0;

	json_object_object_foreach(st->annotations, k, v) {
		if (n == WBG_CONTAINER_ANNOTATIONS_MAX)
			break;
		if (!json_object_is_type(v, json_type_string))
			continue;
		keys[n] = k;
		values[n++] = json_object_get_string(v);
	}
	if (containers_register(e->containers, path, st->id, st->bundle, keys, values, n) < 0)
		log_oom();
	else
		log_debug("%s: container %s (%s), from its runtime's state", path, st->id, st->runtime);
}

static void resolve(struct wbg_expiry *e, struct expiry_cgroup *ec)
{
	struct wbg_container_state st = { 0 };
	const struct wbg_cgroup *c = registry_find_id(e->reg, ec->id);
	const struct wbg_container *reg;
	const char *const *dirs, *annotation = NULL;
	unsigned n_dirs;
	char err[256];
	int found;

	if (!c)
		return;
	/* A container registered through the API (the OCI hook) says it
	 * first; else its runtime's state on disk. */
	reg = containers_find(e->containers, c->path);
	dirs = config_runtime_dirs(e->cfg, &n_dirs);
	found = reg ? 1 : runtime_state_find(dirs, n_dirs, e->cfg->cgroup_root, c->path, &st);
	if (reg) {
		snprintf(st.id, sizeof(st.id), "%s", reg->id);
		snprintf(st.runtime, sizeof(st.runtime), "hook");
		annotation = reg->dirty_expire;
	} else if (found > 0) {
		annotation = runtime_state_annotation(&st, WBG_EXPIRY_ANNOTATION);
		note_container(e, c->path, &st);
	}
	if (policy_resolve(e->cfg, c->path, c->ident.unit, annotation, &ec->policy, err, sizeof(err)) > 0)
		start_policy(e, ec);
	else if (found == 0 && runtimes_present(dirs, n_dirs) && ec->retries++ < RESOLVE_RETRIES)
		/* Maybe a container whose runtime has not written its state
		 * yet (runc writes state.json after its init joined the
		 * cgroup): look again shortly. */
		arm_timer(ec, RESOLVE_RETRY_USEC, on_retry);
	if (err[0]) {
		e->policy_errors++;
		log_warning("%s (container %s, %s): %s%s", c->path, st.id, st.runtime, err,
			    ec->has_policy ? "" : "; the kernel's expiry applies");
	}
	runtime_state_done(&st);
	if (!ec->has_policy && !ec->timer) {
		/* nothing to do for it: not kept */
		tdelete(ec, &e->cgroups, cmp_leading_u64);
		entry_free(ec);
	}
}

void expiry_cgroup_populated(struct wbg_expiry *e, const struct wbg_cgroup *c)
{
	struct expiry_cgroup *ec = find_entry(e, c->id);

	if (ec) {
		/* in use again: a global pod holds the sysctl again */
		if (ec->has_policy && ec->policy.mech == WBG_EXPIRY_GLOBAL && !ec->holding && e->sysctl_ok) {
			ec->holding = true;
			hold(e, ec->holder, ec->policy.expire_cs);
		}
		return;
	}
	if (!c->in_scope || !*c->path)
		return;
	ec = calloc(1, sizeof(*ec));
	if (!ec || !(ec->path = strdup(c->path))) {
		free(ec);
		log_oom();
		return;
	}
	ec->id = c->id;
	ec->e = e;
	snprintf(ec->holder, sizeof(ec->holder), "%.120s (cgroup %" PRIu64 ")", c->path, c->id);
	if (!tsearch(ec, &e->cgroups, cmp_leading_u64)) {
		entry_free(ec);
		log_oom();
		return;
	}
	resolve(e, ec);
}

void expiry_container_registered(struct wbg_expiry *e, const struct wbg_cgroup *c)
{
	struct expiry_cgroup *ec = find_entry(e, c->id);

	if (!ec) {
		if (c->populated)
			expiry_cgroup_populated(e, c);
		return;
	}
	if (ec->has_policy)
		return; /* already decided; a container's annotations do not change */
	ec->timer = sd_event_source_disable_unref(ec->timer);
	resolve(e, ec);
}

void expiry_cgroup_emptied(struct wbg_expiry *e, uint64_t cgroup_id)
{
	struct expiry_cgroup *ec = find_entry(e, cgroup_id);

	/* Not live any more: its request no longer counts. (Per-pod timers
	 * stay: what it left dirty is still due.) */
	if (ec && ec->holding) {
		ec->holding = false;
		release(e, ec->holder);
	}
}

void expiry_cgroup_gone(struct wbg_expiry *e, uint64_t cgroup_id)
{
	struct expiry_cgroup *ec = find_entry(e, cgroup_id);

	if (!ec)
		return;
	if (ec->has_policy)
		e->n_policies[ec->policy.mech]--;
	if (ec->holding)
		release(e, ec->holder);
	if (e->bpf)
		(void)wbg_bpf_expiry_forget(e->bpf, cgroup_id);
	tdelete(ec, &e->cgroups, cmp_leading_u64);
	entry_free(ec);
}

/* The pod's data is due: start writing back its own inodes (the same plan
 * as a handover's, from what BPF recorded it dirtied, but no block devices'
 * page cache, which other pods share; syncfs only where inodes cannot be
 * opened by handle). */
static int on_expiry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct expiry_cgroup *ec = userdata;
	struct wbg_expiry *e = ec->e;
	struct wbg_config cfg = *e->cfg; /* shallow: read only */
	struct wbg_plan plan = { 0 };
	int r;

	ec->timer = sd_event_source_disable_unref(ec->timer);
	/* Re-armed first: what the pod dirties from now on starts the next
	 * round, even while this one runs. */
	(void)wbg_bpf_expiry_arm(e->bpf, ec->id);
	cfg.inode_flush = WBG_INODE_FLUSH_ON;
	cfg.flush_bdev = false;
	r = handover_plan(ec->id, &cfg, &e->host->mounts, &e->host->bdevs, e->bpf, &plan);
	if (r < 0) {
		log_warning_errno(r, "%s: cannot plan its expiry writeback", ec->path);
		return 0;
	}
	for (size_t i = 0; i < plan.n; i++) {
		if (plan.t[i].kind != FLUSH_FS)
			continue;
		if (plan_target_submit(e->pool, &plan.t[i], FLUSH_MODE_EXPIRY, ec->id) < 0) {
			log_oom();
			break;
		}
		ec->pending++;
	}
	log_debug("%s: expiry writeback, %u target%s", ec->path, ec->pending, ec->pending == 1 ? "" : "s");
	plan_free(&plan);
	return 0;
}

void expiry_dirty_event(struct wbg_expiry *e, uint64_t cgroup_id)
{
	struct expiry_cgroup *ec = find_entry(e, cgroup_id);

	if (!ec || !ec->has_policy || ec->policy.mech != WBG_EXPIRY_PER_POD)
		return;
	if (ec->pending)
		ec->dirty_pending = true; /* its round starts when this one ends */
	else if (!ec->timer)
		arm_timer(ec, expiry_usec(ec), on_expiry);
}

void expiry_job_done(struct wbg_expiry *e, const struct flush_job *j)
{
	for (size_t i = 0; i < j->n_pods; i++) {
		struct expiry_cgroup *ec = find_entry(e, j->pods[i]);
		uint64_t dirty = 0;

		if (!ec || !ec->pending || --ec->pending)
			continue;
		e->writebacks++;
		log_debug("%s: expiry writeback done (%s%" PRIu64 " inodes, result %d)", ec->path,
			  j->fell_back ? "fell back to syncfs, " : "", j->stats.inodes_synced, j->result);
		/* Dirtied again meanwhile, or still dirty: another round, one
		 * expiry from now. Clean: no timer until BPF says otherwise. */
		if (ec->dirty_pending ||
		    (cg_read_keyed_u64(e->cfg->cgroup_root, ec->path, "memory.stat", "file_dirty", &dirty) >= 0 &&
		     dirty > 0))
			arm_timer(ec, expiry_usec(ec), on_expiry);
		ec->dirty_pending = false;
	}
}

static int on_boost_end(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_expiry *e = userdata;

	e->boost_source = sd_event_source_disable_unref(e->boost_source);
	log_info("Handover boost over");
	release(e, BOOST_HOLDER);
	return 0;
}

void expiry_handover_ended(struct wbg_expiry *e, const struct wbg_handover *h)
{
	uint64_t now = 0;

	/* Interrupted: wbguardd is stopping, and stopping ends with the
	 * admin's value and no holder (the next start redoes the flush). A
	 * dying wb dirty again at the check is someone else's writing. */
	if (!e->cfg->boost_cs || !e->sysctl_ok || e->verdicts->dying_wb == WBG_VERDICT_ACTIVE ||
	    !handover_wants_boost(h, e->cfg->flush))
		return;
	(void)sd_event_now(e->event, CLOCK_MONOTONIC, &now);
	if (!boost_limit_take(&e->boost_limit, h->tenant, now)) {
		/* logged at 1, 2, 4...: a tenant failing flushes writes a few lines */
		if (!(e->boost_limit.refused & (e->boost_limit.refused - 1)))
			log_notice("Handover %" PRIu64 " of %s did not end cleanly (%s), but its tenant boosted %u times "
				   "lately: no boost (%" PRIu64 " refused so far)",
				   h->id, h->path, wbg_outcome_to_string(h->outcome), BOOST_LIMIT_BURST,
				   e->boost_limit.refused);
		return;
	}
	e->boosts++;
	log_info("Handover %" PRIu64 " of %s did not end cleanly (%s): %s = %u for %" PRIu64 " s", h->id, h->path,
		 wbg_outcome_to_string(h->outcome), WBG_SYSCTL_NAME, e->cfg->boost_cs,
		 e->cfg->boost_window_usec / 1000000);
	hold(e, BOOST_HOLDER, e->cfg->boost_cs);
	/* a later removal extends the window */
	e->boost_source = sd_event_source_disable_unref(e->boost_source);
	if (sd_event_add_time_relative(e->event, &e->boost_source, CLOCK_MONOTONIC, e->cfg->boost_window_usec,
				       100 * 1000, on_boost_end, e) < 0) {
		/* a boost that could not end is no boost */
		log_warning("Cannot arm the boost's end; not boosting");
		release(e, BOOST_HOLDER);
	}
}

/* the help text below says so */
_Static_assert(BOOST_LIMIT_BURST == 3 && BOOST_LIMIT_REFILL_USEC == 20ULL * 60 * 1000000, "boost limit's help text");

void expiry_metrics(FILE *f, const struct wbg_expiry *e)
{
	unsigned cur = 0;

	if (e->sysctl_ok) {
		if (sysctl_keeper_read(&e->sysctl, &cur) >= 0)
			metric_value(f, "wbguard_dirty_expire_seconds", "gauge", "vm.dirty_expire_centisecs now.",
				     cur / 100.0);
		metric_value(f, "wbguard_dirty_expire_admin_seconds", "gauge",
			     "The admin's vm.dirty_expire_centisecs, which wbguardd restores when nothing holds it lowered.",
			     e->sysctl.original / 100.0);
	}
	metric_value(f, "wbguard_sysctl_lowered", "gauge",
		     "1 while wbguardd holds vm.dirty_expire_centisecs below the admin's value.", e->sysctl.lowered);
	metric_value(f, "wbguard_sysctl_holders", "gauge", "Pods and boosts holding the sysctl lowered.",
		     (double)e->sysctl.n_holders);
	metric_counter(f, "wbguard_sysctl_changes_total", "Writes of a lowered value.", e->sysctl.changes);
	metric_counter(f, "wbguard_sysctl_restores_total",
		       "Writes of the admin's value back (including after a crash, at start).", e->sysctl.restores);
	metric_counter(f, "wbguard_sysctl_admin_changes_total",
		       "Changes by someone else while lowered, adopted as the admin's value.", e->sysctl.admin_changes);
	metric_counter(f, "wbguard_sysctl_errors_total",
		       "Failed writes of the sysctl or its state file (read-only /proc/sys, full disk).",
		       e->sysctl.errors);
	metric_family(f, "wbguard_expiry_pods", "gauge", "Pods with a dirty expiry policy, by mechanism.");
	fprintf(f, "wbguard_expiry_pods{mechanism=\"per-pod\"} %zu\n", e->n_policies[WBG_EXPIRY_PER_POD]);
	fprintf(f, "wbguard_expiry_pods{mechanism=\"global\"} %zu\n", e->n_policies[WBG_EXPIRY_GLOBAL]);
	metric_counter(f, "wbguard_expiry_writebacks_total", "Per-pod expiry writebacks run.", e->writebacks);
	metric_counter(f, "wbguard_expiry_policy_errors_total",
		       "Invalid wbguard.io/dirty-expire annotations (the next source decided).", e->policy_errors);
	metric_counter(f, "wbguard_expiry_unsupported_total",
		       "Policies that could not be applied here (no BPF for per-pod, no sysctl for global).",
		       e->unsupported);
	metric_counter(f, "wbguard_expiry_boosts_limited_total",
		       "Boosts refused because the handover's tenant had boosted 3 times lately (one more per 20 minutes).",
		       e->boost_limit.refused);
	metric_counter(f, "wbguard_expiry_boosts_total",
		       "Handovers that did not end cleanly and lowered the sysctl for the boost window.", e->boosts);
}

const struct wbg_sysctl *expiry_sysctl(const struct wbg_expiry *e)
{
	return &e->sysctl;
}
