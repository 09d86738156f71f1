/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "expiry.h"
#include "wbg-flush.h"
#include "wbg-handover.h"
#include "wbg-base.h"
#include "wbg-metrics.h"

#define BOOST_HOLDER "boost"
#define NO_TIMER SIZE_MAX

enum timer_kind { TIMER_EXPIRY, TIMER_RETRY };

struct expiry_cgroup {
	uint64_t id;
	char *path;
	char holder[160]; /* its name as a holder of the sysctl: path and id, as paths repeat */
	struct wbg_policy policy;
	bool has_policy;
	bool holding;       /* global: holds the sysctl */
	unsigned pending;   /* expiry flush jobs in the pool */
	bool dirty_pending; /* dirtied again while its flush ran */
	unsigned retries;
	uint64_t due;       /* its timer: the expiry, or a retry of the policy lookup */
	enum timer_kind kind;
	size_t heap_idx;    /* in e->due, or NO_TIMER */
};

static uint64_t now(const struct wbg_expiry *e)
{
	return e->ops->now(e->userdata);
}

/* The timers: a binary heap by due time, so the next one is found at once
 * and arming or disarming one costs O(log n) however many pods the node
 * has. */
static bool earlier(const struct wbg_expiry *e, size_t a, size_t b)
{
	return e->due[a]->due < e->due[b]->due;
}

static void heap_swap(struct wbg_expiry *e, size_t a, size_t b)
{
	struct expiry_cgroup *t = e->due[a];

	e->due[a] = e->due[b];
	e->due[b] = t;
	e->due[a]->heap_idx = a;
	e->due[b]->heap_idx = b;
}

static void heap_fix(struct wbg_expiry *e, size_t i)
{
	while (i > 0 && earlier(e, i, (i - 1) / 2)) {
		heap_swap(e, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < e->n_due && earlier(e, l, m))
			m = l;
		if (r < e->n_due && earlier(e, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(e, i, m);
		i = m;
	}
}

static void disarm(struct wbg_expiry *e, struct expiry_cgroup *ec)
{
	size_t i = ec->heap_idx;

	if (i == NO_TIMER)
		return;
	ec->heap_idx = NO_TIMER;
	if (i != --e->n_due) {
		e->due[i] = e->due[e->n_due];
		e->due[i]->heap_idx = i;
		heap_fix(e, i);
	}
}

static void reschedule(struct wbg_expiry *e)
{
	uint64_t next = e->n_due ? e->due[0]->due : 0;

	if (e->sysctl_check_due && (!next || e->sysctl_check_due < next))
		next = e->sysctl_check_due;
	if (e->boost_due && (!next || e->boost_due < next))
		next = e->boost_due;
	if (next)
		e->ops->schedule(e->userdata, next);
}

static void arm(struct wbg_expiry *e, struct expiry_cgroup *ec, uint64_t after, enum timer_kind kind)
{
	disarm(e, ec);
	if (e->n_due == e->due_cap) {
		size_t cap = e->due_cap ? e->due_cap * 2 : 16;
		struct expiry_cgroup **v = realloc(e->due, cap * sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */

		if (!v) {
			log_warning("Cannot arm a per-pod expiry timer: the kernel's expiry applies to %s", ec->path);
			return;
		}
		e->due = v;
		e->due_cap = cap;
	}
	ec->due = now(e) + after;
	ec->kind = kind;
	ec->heap_idx = e->n_due;
	e->due[e->n_due++] = ec;
	heap_fix(e, ec->heap_idx);
	reschedule(e);
}

static struct expiry_cgroup *find_entry(const struct wbg_expiry *e, uint64_t id)
{
	struct expiry_cgroup key = { .id = id }, **p = tfind(&key, &e->cgroups, cmp_leading_u64);

	return p ? *p : NULL;
}

static void entry_free(void *p)
{
	struct expiry_cgroup *ec = p;

	free(ec->path);
	free(ec);
}

static void entry_drop(struct wbg_expiry *e, struct expiry_cgroup *ec)
{
	disarm(e, ec);
	tdelete(ec, &e->cgroups, cmp_leading_u64);
	entry_free(ec);
}

/* While the sysctl is lowered, look for the admin's changes now and then;
 * otherwise no timer at all. */
static void sysctl_changed(struct wbg_expiry *e)
{
	if (!e->sysctl.lowered)
		e->sysctl_check_due = 0;
	else if (!e->sysctl_check_due)
		e->sysctl_check_due = now(e) + EXPIRY_SYSCTL_CHECK_USEC;
	reschedule(e);
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

void expiry_start(struct wbg_expiry *e, const struct wbg_expiry_params *p, const char *proc_sys,
		  const char *state_dir, const struct wbg_expiry_ops *ops, void *userdata)
{
	int r;

	*e = (struct wbg_expiry){ .params = *p, .ops = ops, .userdata = userdata };
	r = sysctl_keeper_open(&e->sysctl, proc_sys, state_dir);
	/* Without the sysctl the rest still runs: per-pod expiry needs none. */
	e->sysctl_ok = r >= 0;
	if (r < 0)
		log_warning("No %s: the global expiry mechanism and the handover boost are off", WBG_SYSCTL_NAME);
	sysctl_changed(e);
}

void expiry_stop(struct wbg_expiry *e)
{
	e->sysctl_check_due = e->boost_due = 0;
	if (e->sysctl_ok)
		(void)sysctl_keeper_restore(&e->sysctl);
	tdestroy(e->cgroups, entry_free);
	e->cgroups = NULL;
	free(e->due);
	e->due = NULL;
	e->n_due = e->due_cap = 0;
	e->n_policies[0] = e->n_policies[1] = 0;
}

static uint64_t expiry_usec(const struct expiry_cgroup *ec)
{
	return (uint64_t)ec->policy.expire_cs * 10 * 1000;
}

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
	if (e->ops->arm(e->userdata, ec->id) < 0) {
		e->unsupported++;
		log_warning("%s: per-pod expiry needs the BPF programs that record what each cgroup dirtied; "
			    "it has none",
			    ec->path);
		return;
	}
	/* What it dirtied before it was armed (a container writes as soon as
	 * it starts, its runtime's state may come later): due one expiry from
	 * now. */
	if (e->ops->read_dirty(e->userdata, ec->path, &dirty) >= 0 && dirty > 0)
		arm(e, ec, expiry_usec(ec), TIMER_EXPIRY);
}

/* Its policy from its subject s. */
static void resolve_subject(struct wbg_expiry *e, struct expiry_cgroup *ec, const struct wbg_expiry_subject *s)
{
	char err[256];

	if (policy_resolve(&e->params.rules, s->path, s->unit[0] ? s->unit : NULL, s->has_annotation ? s->annotation : NULL,
			   &ec->policy, err, sizeof(err)) > 0)
		start_policy(e, ec);
	else if (!s->container && s->runtimes_present && ec->retries++ < EXPIRY_RESOLVE_RETRIES)
		/* Maybe a container whose runtime has not written its state
		 * yet (runc writes state.json after its init joined the
		 * cgroup): look again shortly. */
		arm(e, ec, EXPIRY_RESOLVE_RETRY_USEC, TIMER_RETRY);
	if (err[0]) {
		e->policy_errors++;
		log_warning("%s (container %s, %s): %s%s", s->path, s->container_id, s->runtime, err,
			    ec->has_policy ? "" : "; the kernel's expiry applies");
	}
	if (!ec->has_policy && ec->heap_idx == NO_TIMER)
		entry_drop(e, ec); /* nothing to do for it: not kept */
}

static void resolve(struct wbg_expiry *e, struct expiry_cgroup *ec)
{
	struct wbg_expiry_subject s; /* 4.5 KiB, on the loop's stack */

	if (e->ops->lookup(e->userdata, ec->id, &s) < 0)
		entry_drop(e, ec); /* gone meanwhile */
	else
		resolve_subject(e, ec, &s);
}

void expiry_cgroup_populated(struct wbg_expiry *e, uint64_t cgroup_id, bool in_scope)
{
	struct expiry_cgroup *ec = find_entry(e, cgroup_id);
	struct wbg_expiry_subject s;

	if (ec) {
		/* in use again: a global pod holds the sysctl again */
		if (ec->has_policy && ec->policy.mech == WBG_EXPIRY_GLOBAL && !ec->holding && e->sysctl_ok) {
			ec->holding = true;
			hold(e, ec->holder, ec->policy.expire_cs);
		}
		return;
	}
	if (!in_scope || e->ops->lookup(e->userdata, cgroup_id, &s) < 0 || !s.path[0])
		return;
	ec = calloc(1, sizeof(*ec));
	if (!ec || !(ec->path = strdup(s.path))) {
		free(ec);
		log_oom();
		return;
	}
	ec->id = cgroup_id;
	ec->heap_idx = NO_TIMER;
	snprintf(ec->holder, sizeof(ec->holder), "%.120s (cgroup %" PRIu64 ")", s.path, cgroup_id);
	if (!tsearch(ec, &e->cgroups, cmp_leading_u64)) {
		entry_free(ec);
		log_oom();
		return;
	}
	resolve_subject(e, ec, &s);
}

void expiry_container_registered(struct wbg_expiry *e, uint64_t cgroup_id, bool in_scope, bool populated)
{
	struct expiry_cgroup *ec = find_entry(e, cgroup_id);

	if (!ec) {
		if (populated)
			expiry_cgroup_populated(e, cgroup_id, in_scope);
		return;
	}
	if (ec->has_policy)
		return; /* already decided; a container's annotations do not change */
	disarm(e, ec);
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
	e->ops->forget(e->userdata, cgroup_id);
	entry_drop(e, ec);
}

struct collected {
	struct expiry_cgroup **v;
	size_t n;
};

/* twalk_r: counts the entries (v NULL), or collects them */
static void collect(const void *node, VISIT which, void *closure)
{
	struct collected *c = closure;

	if (which != postorder && which != leaf)
		return;
	if (c->v)
		c->v[c->n] = *(struct expiry_cgroup *const *)node;
	c->n++;
}

void expiry_reload(struct wbg_expiry *e, const struct wbg_expiry_params *p)
{
	struct collected c = { 0 };

	e->params = *p;
	/* the entries (those with a policy, and those waiting on a retry)
	 * first: resolving may drop one from the tree */
	twalk_r(e->cgroups, collect, &c);
	c.v = calloc(c.n + 1, sizeof(*c.v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	if (!c.v) {
		log_oom();
		return;
	}
	c.n = 0;
	twalk_r(e->cgroups, collect, &c);
	for (size_t i = 0; i < c.n; i++) {
		struct expiry_cgroup *ec = c.v[i];
		bool live = ec->holding || !ec->has_policy || ec->policy.mech != WBG_EXPIRY_GLOBAL;
		uint64_t id = ec->id;

		if (ec->has_policy)
			e->n_policies[ec->policy.mech]--;
		if (ec->holding)
			release(e, ec->holder);
		e->ops->forget(e->userdata, ec->id);
		disarm(e, ec);
		ec->has_policy = ec->holding = false;
		ec->retries = 0;
		resolve(e, ec);
		/* an emptied global pod holds nothing until it is in use
		 * again */
		ec = find_entry(e, id);
		if (ec && ec->holding && !live) {
			ec->holding = false;
			release(e, ec->holder);
		}
	}
	free(c.v);
}

/* The pod's data is due: its own inodes written back. */
static void run_expiry(struct wbg_expiry *e, struct expiry_cgroup *ec)
{
	int n;

	/* Re-armed first: what the pod dirties from now on starts the next
	 * round, even while this one runs. */
	(void)e->ops->arm(e->userdata, ec->id);
	n = e->ops->writeback(e->userdata, ec->id, ec->path);
	if (n < 0) {
		log_warning_errno(n, "%s: cannot start its expiry writeback", ec->path);
		return;
	}
	ec->pending += (unsigned)n;
	log_debug("%s: expiry writeback, %d target%s", ec->path, n, n == 1 ? "" : "s");
}

void expiry_dirty_event(struct wbg_expiry *e, uint64_t cgroup_id)
{
	struct expiry_cgroup *ec = find_entry(e, cgroup_id);

	if (!ec || !ec->has_policy || ec->policy.mech != WBG_EXPIRY_PER_POD)
		return;
	if (ec->pending)
		ec->dirty_pending = true; /* its round starts when this one ends */
	else if (ec->heap_idx == NO_TIMER)
		arm(e, ec, expiry_usec(ec), TIMER_EXPIRY);
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
		if (ec->dirty_pending || (e->ops->read_dirty(e->userdata, ec->path, &dirty) >= 0 && dirty > 0))
			arm(e, ec, expiry_usec(ec), TIMER_EXPIRY);
		ec->dirty_pending = false;
	}
}

void expiry_handover_ended(struct wbg_expiry *e, const struct wbg_handover *h)
{
	/* Interrupted: wbguardd is stopping, and stopping ends with the
	 * admin's value and no holder (the next start redoes the flush). A
	 * dying wb dirty again at the check is someone else's writing. */
	if (!e->params.boost_cs || !e->sysctl_ok || e->ops->fallback_active(e->userdata) ||
	    !handover_wants_boost(h, e->params.flush))
		return;
	if (!boost_limit_take(&e->boost_limit, h->tenant, now(e))) {
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
		 wbg_outcome_to_string(h->outcome), WBG_SYSCTL_NAME, e->params.boost_cs,
		 e->params.boost_window_usec / 1000000);
	hold(e, BOOST_HOLDER, e->params.boost_cs);
	/* a later removal extends the window */
	e->boost_due = now(e) + e->params.boost_window_usec;
	reschedule(e);
}

void expiry_tick(struct wbg_expiry *e)
{
	uint64_t t = now(e);

	while (e->n_due && e->due[0]->due <= t) {
		struct expiry_cgroup *ec = e->due[0];

		disarm(e, ec);
		if (ec->kind == TIMER_RETRY)
			resolve(e, ec);
		else
			run_expiry(e, ec);
	}
	if (e->sysctl_check_due && e->sysctl_check_due <= t) {
		e->sysctl_check_due = 0;
		(void)sysctl_keeper_check(&e->sysctl);
		sysctl_changed(e);
	}
	if (e->boost_due && e->boost_due <= t) {
		e->boost_due = 0;
		log_info("Handover boost over");
		release(e, BOOST_HOLDER);
	}
	reschedule(e);
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
