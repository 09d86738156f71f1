/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <json-c/json.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include "bpf-programs.h"
#include "escape.h"
#include "expiry.h"
#include "cgroup-util.h"
#include "flush-pool.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "manager-dying.h"
#include "metrics-http.h"
#include "oci.h"
#include "pending.h"
#include "textfile.h"
#include "watch-systemd.h"
#include "wbstats.h"

/* How long after the scratch cycle the kernel's cleanup work has run. */
#define VERIFY_DELAY_USEC (200 * 1000)
/* How long removals gather before one scratch cycle serves them all: under
 * churn, at most 20 cycles a second whatever the removal rate. */
#define CLEANUP_BATCH_USEC (50 * 1000)

static uint64_t now_usec(struct manager *m)
{
	uint64_t t = 0;

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &t);
	return t;
}

static struct wbg_handover *find_active(struct manager *m, uint64_t id)
{
	struct wbg_handover key = { .id = id }, **f = tfind(&key, &m->active, cmp_leading_u64);

	return f ? *f : NULL;
}

void manager_refresh_verdict(struct manager *m)
{
	enum wbg_verdict d, b;

	m->verdict_checked_usec = now_usec(m);
	if (m->bpf)
		(void)wbg_bpf_evidence(m->bpf, &m->evidence);
	d = verdict_dying_wb(&m->evidence);
	b = verdict_bdev_flush(&m->evidence);
	if (d != m->dying_wb)
		log_info("Kernel dying-wb fallback: %s (symbol %s, dying wbs found %" PRIu64
			 ", foreign flushes to dying wbs: %" PRIu64 " ok, %" PRIu64 " -ENOENT)",
			 wbg_verdict_to_string(d), m->evidence.sym_lookup_dying ? "present" : "absent",
			 m->evidence.lookup_dying_found, m->evidence.ok_to_dying, m->evidence.enoent_to_dying);
	if (b != m->bdev_flush)
		log_info("Kernel flushes foreign bdev mappings separately: %s%s (symbol %s, flush_foreign dev field %s, "
			 "bdev flushes seen %" PRIu64 ", foreign bdev dirtying on its own path %" PRIu64
			 ", on the owner-wb path %" PRIu64 ")",
			 wbg_verdict_to_string(b), verdict_bdev_dormant(&m->evidence) ? " (code present but dormant)" : "",
			 m->evidence.sym_bdev_flush ? "present" : "absent", m->evidence.tp_dev_field ? "present" : "absent",
			 m->evidence.bdev_flushes, m->evidence.bdev_dirty_own_path, m->evidence.bdev_dirty_shared_path);
	m->dying_wb = d;
	m->bdev_flush = b;
	/* auto: on unless the kernel shows it reaches dying wbs itself */
	if (m->cfg.mitigation == WBG_MITIGATION_AUTO && m->mitigating != (d != WBG_VERDICT_ACTIVE)) {
		m->mitigating = d != WBG_VERDICT_ACTIVE;
		log_info("Mitigation %s (mode auto, dying-wb fallback %s)", m->mitigating ? "on" : "off",
			 wbg_verdict_to_string(d));
	}
}

static void waiter_free(struct wbg_flush_waiter *w)
{
	struct wbg_flush_waiter **p;

	for (p = &w->m->waiters; *p && *p != w; p = &(*p)->next)
		;
	if (*p) {
		*p = w->next;
		w->m->n_waiters--;
	}
	sd_event_source_disable_unref(w->timer);
	sd_bus_message_unref(w->call);
	free(w);
}

static void reply_flush(sd_bus_message *call, uint64_t id, const char *outcome, const char *reason)
{
	int r = sd_bus_reply_method_return(call, "tss", id, outcome, reason ? reason : "");

	if (r < 0)
		log_debug_errno(r, "Cannot reply to FlushCgroup (the caller left?)");
}

/* The handover's flush is over (or it ended without one): answer whoever
 * waits for it. */
static void reply_waiters(struct manager *m, const struct wbg_handover *h)
{
	struct wbg_flush_waiter *w = m->waiters, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->handover_id != h->id)
			continue;
		reply_flush(w->call, h->id, wbg_outcome_to_string(h->outcome), h->reason);
		waiter_free(w);
	}
}

static void remember(struct manager *m, const struct wbg_handover *h, const char *json)
{
	struct wbg_recent *r = &m->recent[m->recent_handover_next++ % WBG_RECENT_MAX];

	free(r->path);
	free(r->json);
	*r = (struct wbg_recent){ .id = h->id, .path = strdup(h->path), .json = strdup(json),
				  .outcome = wbg_outcome_to_string(h->outcome), .reason = h->reason };
}

static const struct wbg_recent *recent_by(const struct manager *m, uint64_t id, const char *path)
{
	/* newest first */
	for (uint64_t i = 0; i < WBG_RECENT_MAX && i < m->recent_handover_next; i++) {
		const struct wbg_recent *r = &m->recent[(m->recent_handover_next - 1 - i) % WBG_RECENT_MAX];

		if (!r->path)
			continue;
		if (id ? r->id == id : strcmp(r->path, path) == 0)
			return r;
	}
	return NULL;
}

/* Structured fields for the journal: the handover, its cgroup and, when the
 * hook registered it, its pod. */
static void log_handover(struct manager *m, const struct wbg_handover *h, const char *json)
{
	int level = h->outcome == WBG_OUTCOME_FAILED || h->outcome == WBG_OUTCOME_TIMEOUT ? LOG_WARNING : LOG_INFO;
	const struct wbg_container *ct = containers_find(&m->containers, h->path);

	if (level > log_get_max_level())
		return;
	_cleanup_free_ char *path = NULL, *msg = NULL;

	if (!log_to_journal()) {
		log_full_errno(level, 0, "handover %" PRIu64 " %s: %s", h->id, h->path, json);
		return;
	}
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
			      "WBGUARD_TRIGGER=%s", wbg_trigger_to_string(h->trigger), "WBGUARD_POD=%s",
			      ct && ct->pod ? ct->pod : "", "WBGUARD_NAMESPACE=%s", ct && ct->namespace ? ct->namespace : "",
			      "WBGUARD_CONTAINER=%s", ct && ct->name ? ct->name : "", "WBGUARD_CONTAINER_ID=%s",
			      ct ? ct->id : "", NULL);
}

/* The end of a handover: counted, recorded, logged, freed. */
void manager_retire(struct manager *m, struct wbg_handover *h)
{
	struct wbg_cgroup *c = registry_find_id(&m->reg, h->cgroup_id);
	struct json_object *o;
	const char *json;

	if (h->outcome == WBG_OUTCOME_PENDING)
		h->outcome = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
	if (c && c->handover == h)
		c->handover = NULL;
	if (h->t_first_flush) {
		/* on-evidence, the reaction is to the evidence, not to the
		 * removal that came long before it */
		uint64_t from = h->t_evidence && h->t_evidence <= h->t_first_flush ? h->t_evidence : h->t_trigger;

		hist_observe(&m->reaction, (double)(h->t_first_flush - from) / 1e6);
		if (h->t_flushed)
			hist_observe(&m->flush_duration, (double)(h->t_flushed - h->t_first_flush) / 1e6);
	}
	m->flushed_device_bytes += h->device_bytes;
	sd_event_source_disable_unref(h->timeout_source);
	if (tdelete(h, &m->active, cmp_leading_u64))
		m->n_active--;
	if (h->pending_saved)
		pending_drop(m->cfg.state_dir, h->id);
	m->handovers[h->trigger][h->outcome]++;
	expiry_handover_ended(m, h);
	reply_waiters(m, h);
	o = handover_to_json(h);
	json = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	log_handover(m, h, json);
	remember(m, h, json);
	records_append(&m->records, json);
	json_object_put(o);
	handover_free(h);
	/* new evidence comes with use; at most every 10 s, never on a timer */
	if (now_usec(m) - m->verdict_checked_usec > 10ULL * 1000 * 1000)
		manager_refresh_verdict(m);
	metrics_textfile_update(m, false);
}

/* A one-shot timer at usec, unless it is already armed (for earlier). */
static void arm_once(sd_event_source *s, uint64_t usec)
{
	int enabled = SD_EVENT_OFF;

	if (!s || (sd_event_source_get_enabled(s, &enabled) >= 0 && enabled != SD_EVENT_OFF))
		return;
	if (sd_event_source_set_time(s, usec) < 0 || sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0)
		log_warning("Cannot arm a cleanup, verify or series timer: it runs with the next one");
}

/* The verify queue's handovers that are due: one read of wb_stats says for
 * all of them whether a dying wb of theirs still has dirty IO. */
static int on_verify(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_free_ uint64_t *dirty = NULL;
	size_t n = 0;
	uint64_t now = now_usec(m);
	int r = wbstats_dirty_cgroups(m->debugfs, &dirty, &n);

	if (r == -ENOMEM)
		log_oom();
	while (m->verify_head && m->verify_head->verify_due <= now) {
		struct wbg_handover *h = m->verify_head;

		m->verify_head = h->queue_next;
		if (!m->verify_head)
			m->verify_tail = NULL;
		if (r >= 0) {
			h->verify = !wbstats_set_has(dirty, n, h->cgroup_id);
			h->t_verified = now;
			if (!h->verify) {
				m->verify_dirty++;
				log_notice("A dying wb of %s still has dirty IO after the handover", h->path);
			}
		}
		manager_retire(m, h);
	}
	if (m->verify_head)
		arm_once(m->verify_source, m->verify_head->verify_due);
	return 0;
}

/* One scratch memcg cycle for every handover queued since the last: its
 * removal makes the kernel re-run its offline-wb cleanup, which covers
 * every dying wb, not only the one it was run for. */
static int on_cleanup(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	struct wbg_handover *h = m->cleanup_head, *next;
	bool done = false;
	uint64_t now;
	int r;

	m->cleanup_head = m->cleanup_tail = NULL;
	if (h && m->cfg.scratch_cycle && m->scratch.path) {
		r = scratch_cycle(&m->scratch, ++m->cleanup_seq);
		if (r < 0) {
			m->cleanup_failures++;
			log_warning_errno(r, "Scratch memcg cycle (for %s and the handovers with it) failed", h->path);
		} else {
			m->cleanup_cycles++;
			done = true;
		}
	}
	now = now_usec(m);
	for (; h; h = next) {
		next = h->queue_next;
		if (done) {
			h->cleanup_done = true;
			h->t_cleanup = now;
		}
		h->verify_due = now + VERIFY_DELAY_USEC;
		LIST_APPEND(&m->verify_head, &m->verify_tail, h, queue_next);
	}
	if (m->verify_head)
		arm_once(m->verify_source, m->verify_head->verify_due);
	return 0;
}

/* After the flush, with the cgroup gone: make the kernel re-run its
 * offline-wb cleanup, then check that the dying wb is clean. Without the
 * timers (out of memory at start) the handover ends here. */
static void cleanup_and_verify(struct manager *m, struct wbg_handover *h)
{
	if (!m->cleanup_source || !m->verify_source) {
		manager_retire(m, h);
		return;
	}
	LIST_APPEND(&m->cleanup_head, &m->cleanup_tail, h, queue_next);
	arm_once(m->cleanup_source, now_usec(m) + CLEANUP_BATCH_USEC);
}

/* All targets done (or given up on). */
static void flush_finished(struct manager *m, struct wbg_handover *h)
{
	h->t_flushed = now_usec(m);
	if (manager_dying_flushed(m, h))
		return; /* on-evidence: the watch cleans up and checks */
	if (h->outcome == WBG_OUTCOME_PENDING)
		h->outcome = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
	reply_waiters(m, h);
	if (h->t_removed)
		cleanup_and_verify(m, h);
	else if (h->trigger == WBG_TRIGGER_API)
		manager_retire(m, h); /* asked for while in use: its going-away is another handover */
	/* else: the cgroup still exists; its removal continues the handover. */
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_handover *h = userdata;
	struct manager *m = h->owner;

	if (h->n_pending == 0)
		return 0;
	log_warning("Flush for %s did not finish in %.1f s", h->path, (double)m->cfg.timeout_usec / 1e6);
	/* a worker still inside it goes on waiting for the kernel, and
	 * another thread takes its place */
	if (flush_pool_reap_stuck(m->pool, m->cfg.timeout_usec))
		log_warning("A flush worker is stuck in the kernel (a filesystem that does not answer); started another");
	h->outcome = WBG_OUTCOME_TIMEOUT;
	h->reason = "flush timeout";
	h->n_pending = 0;
	flush_finished(m, h);
	return 0;
}

/* Every handover with a flush running has its timeout: one that cannot be
 * armed ends now (failed), rather than never. */
static void arm_timeout(struct manager *m, struct wbg_handover *h)
{
	int r;

	/* on-evidence flushes one handover more than once */
	h->timeout_source = sd_event_source_disable_unref(h->timeout_source);
	r = sd_event_add_time_relative(m->event, &h->timeout_source, CLOCK_MONOTONIC,
					   m->cfg.timeout_usec, 0, on_timeout, h);

	if (r >= 0)
		return;
	log_error_errno(r, "Cannot arm the flush timeout of handover %" PRIu64 "; ending it", h->id);
	h->outcome = WBG_OUTCOME_FAILED;
	h->reason = "its timeout could not be armed";
	h->n_pending = 0;
	flush_finished(m, h);
}

/* On disk while its flush runs, so that a restart redoes it (pending.h). A
 * failure costs only that: logged at debug level. */
static void save_pending(struct manager *m, struct wbg_handover *h, const struct wbg_plan *plan)
{
	_cleanup_free_ dev_t *devs = calloc(plan->n + 1, sizeof(*devs));
	_cleanup_free_ bool *bdev = calloc(plan->n + 1, sizeof(*bdev));
	int r;

	if (h->pending_saved || !devs || !bdev)
		return;
	for (size_t i = 0; i < plan->n; i++) {
		devs[i] = plan->t[i].dev;
		bdev[i] = plan->t[i].kind == FLUSH_BDEV;
	}
	r = pending_save(m->cfg.state_dir, h->id, h->path, h->cgroup_id, devs, bdev, plan->n);
	if (r < 0)
		log_debug_errno(r, "Cannot record handover %" PRIu64 " as pending in %s", h->id, m->cfg.state_dir);
	else
		h->pending_saved = true;
}

static int submit_plan(struct manager *m, struct wbg_handover *h, struct wbg_plan *plan)
{
	int r;

	h->plan_source = plan->source;
	h->n_excluded = plan->n_excluded;
	for (size_t i = 0; i < plan->n; i++) {
		struct wbg_plan_target *t = &plan->t[i];

		log_debug("handover %" PRIu64 ": target %u:%u %s %s, %s%zu inodes, %u passes", h->id, major(t->dev),
			  minor(t->dev), t->fstype, t->mount, t->use_inodes ? "" : "syncfs, ", t->n_inodes, t->passes);
		r = plan_target_submit(m->pool, t, h->flush_inodes ? FLUSH_MODE_EVIDENCE : FLUSH_MODE_HANDOVER, h->id);
		if (r == -EBUSY) {
			/* that target's queue is full (its flush hangs): failed */
			log_warning("handover %" PRIu64 ": %s is not taking flushes (too many waiting)", h->id, t->mount);
			h->n_failed++;
			continue;
		}
		if (r < 0)
			return log_oom();
		if (h->n_targets < ELEMENTSOF(h->target)) {
			h->target[h->n_targets].major = major(t->dev);
			h->target[h->n_targets].minor = minor(t->dev);
			snprintf(h->target[h->n_targets].fstype, sizeof(h->target[0].fstype), "%s", t->fstype);
			h->target[h->n_targets].how = t->kind == FLUSH_BDEV ? "bdev" : t->use_inodes ? "inodes" : "syncfs";
		}
		h->n_targets++;
		h->n_pending++;
		if (t->kind == FLUSH_BDEV)
			h->n_bdev++;
		else if (t->use_inodes)
			h->n_inode_targets++;
		else
			h->n_fs++;
	}
	save_pending(m, h, plan);
	return 0;
}

static bool has_children(struct manager *m, const struct wbg_cgroup *c)
{
	char p[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	snprintf(p, sizeof(p), "%s/%s", m->cfg.cgroup_root, c->path);
	d = opendir(p);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.')
			return true;
	return false;
}

/* The BPF object, if it knows what each cgroup dirtied. */
static const struct wbg_bpf *dirtied_bpf(const struct manager *m)
{
	return wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED ? m->bpf : NULL;
}

static int plan_for(struct manager *m, const struct wbg_cgroup *c, struct wbg_plan *ret)
{
	if (!dirtied_bpf(m) && c->n_ns_devs)
		return handover_plan_devs(&m->cfg, &m->mounts, c->ns_devs, c->n_ns_devs, ret);
	return handover_plan(c->id, &m->cfg, &m->mounts, &m->bdevs, dirtied_bpf(m), ret);
}

/* Without BPF, what a populated cgroup may write is what its processes'
 * mount namespace shows: read it now, while they are alive. */
static void note_mount_namespace(struct manager *m, struct wbg_cgroup *c)
{
	_cleanup_free_ char *procs = NULL;
	char p[PATH_MAX];
	dev_t *devs;
	unsigned n;
	int pid;

	if (dirtied_bpf(m) || !*c->path)
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

struct path_prefix {
	const char *path;
	size_t len;
	bool found;
};

static void match_descendant(const void *nodep, VISIT which, void *closure)
{
	const struct wbg_handover *h = *(struct wbg_handover *const *)nodep;
	struct path_prefix *p = closure;

	if ((which == postorder || which == leaf) && strncmp(h->path, p->path, p->len) == 0 && h->path[p->len] == '/')
		p->found = true;
}

static void match_tracked_descendant(struct wbg_cgroup *c, void *userdata)
{
	struct path_prefix *p = userdata;

	if (strncmp(c->path, p->path, p->len) == 0 && c->path[p->len] == '/')
		p->found = true;
}

/* Whether a cgroup below path has a handover in progress or among the
 * recent ones, or is still tracked (its removal, in the same batch of
 * events, not read yet: it will have its handover). */
static bool descendants_handed_over(const struct manager *m, const char *path)
{
	struct path_prefix p = { .path = path, .len = strlen(path) };

	if (!*path)
		return false;
	twalk_r(m->active, match_descendant, &p);
	if (!p.found)
		registry_foreach(&m->reg, match_tracked_descendant, &p);
	for (size_t i = 0; i < WBG_RECENT_MAX && !p.found; i++) {
		const char *r = m->recent[i].path;

		p.found = r && strncmp(r, path, p.len) == 0 && r[p.len] == '/';
	}
	return p.found;
}

/* A handover that ends before any flush. One that ends while the cgroup
 * still exists covers its removal too (settled). */
static void end_early(struct manager *m, struct wbg_cgroup *c, struct wbg_handover *h, enum wbg_outcome o,
		      const char *reason)
{
	h->outcome = o;
	h->reason = reason;
	c->handover = NULL;
	c->settled = !h->t_removed && h->trigger != WBG_TRIGGER_API;
	manager_retire(m, h);
}

/* A new handover, in the active set (NULL: out of memory, logged). */
static struct wbg_handover *handover_start(struct manager *m, uint64_t cgroup_id, const char *path,
					   enum wbg_trigger trigger)
{
	struct wbg_handover *h = handover_new(ids_next(&m->ids), cgroup_id, path, trigger, now_usec(m));

	if (!h || !tsearch(h, &m->active, cmp_leading_u64)) {
		handover_free(h);
		log_oom();
		return NULL;
	}
	h->owner = m;
	m->n_active++;
	return h;
}

/* Plans and starts a handover's flush now: what BPF says the cgroup
 * dirtied, else every filesystem. */
int manager_flush_handover(struct manager *m, struct wbg_handover *h, bool inodes)
{
	struct wbg_plan plan = { 0 };
	enum wbg_inode_flush was = m->cfg.inode_flush;
	int r;

	if (inodes)
		m->cfg.inode_flush = WBG_INODE_FLUSH_ON; /* the plan takes the inode sets */
	r = handover_plan(h->cgroup_id, &m->cfg, &m->mounts, &m->bdevs, dirtied_bpf(m), &plan);
	m->cfg.inode_flush = was;
	h->flush_inodes = inodes;

	if (r >= 0 && plan.n == 0) {
		plan_free(&plan);
		r = handover_plan_mounts(&m->cfg, &m->mounts, &plan);
		plan.source = "mounts";
	}
	if (r >= 0 && plan.n > 0)
		r = submit_plan(m, h, &plan);
	plan_free(&plan);
	if (r < 0) {
		h->n_failed++;
		return r;
	}
	if (h->n_pending)
		arm_timeout(m, h);
	return 0;
}

/* on-evidence, the cgroup gone: its dying wb is watched (dying.h); when the
 * table is full, flushed now as eager mode would, and cleaned up after. */
static void watch_or_flush(struct manager *m, struct wbg_handover *h)
{
	h->deferred = false;
	if (manager_dying_watch(m, h) >= 0)
		return;
	if (manager_flush_handover(m, h, false) < 0)
		log_error("Cannot flush %s", h->path);
	if (h->n_pending == 0)
		cleanup_and_verify(m, h);
}

/* Starts a handover, or moves an existing one on (populated 0, then the
 * directory gone). */
static void handover_event(struct manager *m, struct wbg_cgroup *c, enum wbg_trigger trigger)
{
	struct wbg_handover *h = c->handover;
	uint64_t dirty = 0, wb = 0;
	struct wbg_plan plan = { 0 };
	int r;

	if (h) {
		if (trigger == WBG_TRIGGER_POPULATED_0 && h->deferred)
			return; /* on-evidence: nothing until the removal */
		if (trigger == WBG_TRIGGER_POPULATED_0 && h->trigger == WBG_TRIGGER_STOP_JOB && !h->replanned) {
			/* The stop job's flush ran while the processes were still
			 * writing: once more for what they wrote since. */
			unsigned t = h->n_targets, fs = h->n_fs, in = h->n_inode_targets, bd = h->n_bdev;

			h->replanned = true;
			if (plan_for(m, c, &plan) >= 0)
				(void)submit_plan(m, h, &plan);
			plan_free(&plan);
			/* the same targets again: counted once */
			h->n_targets = t, h->n_fs = fs, h->n_inode_targets = in, h->n_bdev = bd;
			return;
		}
		if (trigger == WBG_TRIGGER_REMOVED || trigger == WBG_TRIGGER_RESCAN) {
			h->t_removed = now_usec(m);
			c->handover = NULL; /* the cgroup entry goes away now */
			if (h->deferred)
				watch_or_flush(m, h);
			else if (h->n_pending > 0)
				h->removed_before_flushed = true; /* cleanup follows the flush */
			else
				cleanup_and_verify(m, h);
		}
		return;
	}

	/* One record per going-away: a handover that already ended at
	 * populated 0 (clean, disabled, children) covers the removal too. */
	if (c->settled && (trigger == WBG_TRIGGER_REMOVED || trigger == WBG_TRIGGER_RESCAN))
		return;
	h = handover_start(m, c->id, c->path, trigger);
	if (!h)
		return;
	m->recent_ids[m->recent_next++ % ELEMENTSOF(m->recent_ids)] = c->id;
	if (trigger == WBG_TRIGGER_REMOVED || trigger == WBG_TRIGGER_RESCAN || trigger == WBG_TRIGGER_RMDIR_BPF)
		h->t_removed = h->t_trigger;
	else
		c->handover = h;

	/* A parent (a pod slice, a delegated service) is emptied when its
	 * children are: they have handovers of their own. */
	if (!h->t_removed && trigger != WBG_TRIGGER_API && has_children(m, c)) {
		end_early(m, c, h, WBG_OUTCOME_CHILDREN, "its child cgroups have handovers of their own");
		return;
	}
	/* An explicit request is done whatever the kernel can do itself. */
	if (!m->mitigating && trigger != WBG_TRIGGER_API) {
		end_early(m, c, h, WBG_OUTCOME_DISABLED, "mitigation off");
		return;
	}
	if (!m->cfg.flush) {
		end_early(m, c, h, WBG_OUTCOME_DISABLED, "flush disabled ([flush] enable = no)");
		return;
	}
	/* While the cgroup exists, its own counters say whether anything is
	 * dirty; a vanished cgroup (ENOENT/ENODEV) is normal here. */
	if (!h->t_removed) {
		r = cg_read_dirty(m->cfg.cgroup_root, c->path, &dirty, &wb);
		if (r >= 0) {
			h->dirty_known = true;
			h->dirty_bytes = dirty;
			if (dirty + wb == 0) {
				end_early(m, c, h, WBG_OUTCOME_CLEAN, "file_dirty and file_writeback were 0");
				return;
			}
		} else
			log_debug_errno(r, "No memory.stat for %s", c->path);
	}

	r = plan_for(m, c, &plan);
	if (r < 0) {
		log_error_errno(r, "Cannot plan the flush of %s", c->path);
		h->outcome = WBG_OUTCOME_FAILED;
		h->reason = "planning failed";
	} else if (plan.n == 0 && plan.own_set_missing && h->dirty_known && descendants_handed_over(m, c->path)) {
		/* A pod's cgroup whose containers were removed just before it
		 * (runtimes rmdir them at once): its memory.stat still counts
		 * their dying cgroups' pages, which their handovers cover. */
		h->outcome = WBG_OUTCOME_CHILDREN;
		h->reason = "dirtied nothing itself; its removed child cgroups' handovers cover the rest";
	} else if (plan.n == 0 && plan.set_maybe_evicted && h->dirty_known) {
		/* Its set may be one the BPF LRU evicted (a tenant with many
		 * cgroups): every filesystem, rather than dirty data left. */
		m->plans_set_evicted++;
		r = handover_plan_mounts(&m->cfg, &m->mounts, &plan);
		plan.source = "mounts (bpf set evicted)";
		if (r >= 0 && plan.n > 0)
			r = submit_plan(m, h, &plan);
		if (r < 0 || plan.n == 0) {
			h->outcome = r < 0 ? WBG_OUTCOME_FAILED : WBG_OUTCOME_NO_TARGETS;
			h->reason = r < 0 ? "planning failed" : "dirty, but no filesystem to flush was found";
		}
	} else if (plan.n == 0 && plan.n_excluded) {
		/* network and FUSE filesystems have no cgroup writeback (no
		 * dying wb to stall on), and their syncfs can hang */
		h->outcome = WBG_OUTCOME_NO_TARGETS;
		h->reason = "its filesystems are excluded ([flush] exclude_fstypes)";
		h->not_own = true;
	} else if (plan.n == 0) {
		/* Nothing recorded: with BPF this means the cgroup dirtied no
		 * filesystem we can reach; with its set missing (not evicted),
		 * that the dirty pages charged to it are not its own writes, so
		 * they do not boost. */
		h->outcome = h->dirty_known ? WBG_OUTCOME_NO_TARGETS : WBG_OUTCOME_CLEAN;
		h->reason = h->dirty_known ? (plan.own_set_missing ? "dirty, but it dirtied no filesystem itself"
								   : "dirty, but no filesystem to flush was found")
					   : "nothing dirtied was recorded";
		h->not_own = plan.own_set_missing;
	} else if (manager_dying_on_evidence(m) && trigger != WBG_TRIGGER_API) {
		/* on-evidence: no data I/O now; its removal is watched */
		h->plan_source = plan.source;
		h->deferred = true;
	} else {
		r = submit_plan(m, h, &plan);
		if (r < 0) {
			h->outcome = WBG_OUTCOME_FAILED;
			h->reason = "out of memory";
		}
	}
	plan_free(&plan);
	if (h->deferred) {
		if (h->t_removed)
			watch_or_flush(m, h);
		return;
	}
	if (h->n_pending == 0) {
		if (h->t_removed && h->outcome != WBG_OUTCOME_FAILED && h->outcome != WBG_OUTCOME_CLEAN)
			cleanup_and_verify(m, h);
		else {
			c->handover = NULL;
			manager_retire(m, h);
		}
		return;
	}
	arm_timeout(m, h);
}

void manager_stop_hint(struct manager *m, const char *cgroup_path)
{
	struct wbg_cgroup *c;

	while (*cgroup_path == '/')
		cgroup_path++;
	c = registry_find_path(&m->reg, cgroup_path);
	if (!c || !c->in_scope || c->removed) {
		log_debug("Stop of %s: not a tracked cgroup", cgroup_path);
		return;
	}
	handover_event(m, c, WBG_TRIGGER_STOP_JOB);
}

struct unit_lookup {
	const char *unit;
	struct wbg_cgroup *found;
};

static void match_unit(struct wbg_cgroup *c, void *userdata)
{
	struct unit_lookup *l = userdata;

	/* The system manager's units over a user manager's of the same name:
	 * the shorter path. */
	if (c->in_scope && !c->removed && strcmp(c->ident.unit, l->unit) == 0 &&
	    (!l->found || strlen(c->path) < strlen(l->found->path)))
		l->found = c;
}

static struct wbg_cgroup *find_unit(struct manager *m, const char *unit)
{
	struct unit_lookup l = { .unit = unit };

	registry_foreach(&m->reg, match_unit, &l);
	return l.found;
}

void manager_job_hint(struct manager *m, const char *unit)
{
	struct wbg_cgroup *c = find_unit(m, unit);

	if (!c || !c->populated || c->handover)
		return;
	handover_event(m, c, WBG_TRIGGER_STOP_JOB);
}

void manager_job_type(struct manager *m, const char *unit, const char *type)
{
	struct wbg_cgroup *c = find_unit(m, unit);

	/* Only a stop (or restart) empties the cgroup; for other jobs the
	 * early flush was harmless and the record says what it was for. */
	if (c && c->handover && c->handover->trigger == WBG_TRIGGER_STOP_JOB && strcmp(type, "stop") != 0 &&
	    strcmp(type, "restart") != 0)
		c->handover->reason = strcmp(type, "reload") == 0 ? "job was a reload" : "job was not a stop";
}

static bool recently_handled(const struct manager *m, uint64_t id)
{
	for (size_t i = 0; i < ELEMENTSOF(m->recent_ids); i++)
		if (m->recent_ids[i] == id)
			return true;
	return false;
}

/* A departed cgroup's per-cgroup series go (its retention is over, or it was
 * evicted from the departed table), and with its last report the names of
 * the container that was in it. */
static void drop_series(uint64_t id, void *userdata)
{
	struct manager *m = userdata;
	const struct wbg_departed_entry *d = departed_find(&m->departed, id);

	/* the container's names went with its last report */
	if (d && !registry_find_path(&m->reg, d->path))
		containers_forget(&m->containers, d->path);

	if (m->bpf)
		(void)wbg_bpf_drop_cgroup_series(m->bpf, id);
}

static bool metrics_exported(const struct manager *m)
{
	return m->mhd || m->cfg.metrics_textfile[0];
}

/* New evidence comes with use (a retired handover refreshes it too); a
 * reader never does: the timer keeps what a scrape shows current. */
#define VERDICT_REFRESH_USEC (10ULL * 1000 * 1000)
static int on_verdict_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	manager_refresh_verdict(m);
	if (sd_event_source_set_time_relative(s, VERDICT_REFRESH_USEC) < 0 ||
	    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0)
		log_warning("Cannot re-arm the verdict timer: verdicts refresh at handover ends only");
	return 0;
}

/* Departed series whose retention is over go; the timer comes back for
 * the next one due. */
static int on_departed_due(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	uint64_t next = 0, now = now_usec(m), keep = m->cfg.departed_retention_usec;

	(void)departed_drop_released(&m->departed, now > keep ? now - keep : 0, drop_series, m, &next);
	if (next)
		arm_once(m->departed_source, next + keep);
	return 0;
}

const char *manager_cgroup_path(const struct manager *m, uint64_t id)
{
	const struct wbg_cgroup *c = registry_find_id(&m->reg, id);
	const struct wbg_departed_entry *d;

	if (c)
		return c->path;
	d = departed_find(&m->departed, id);
	return d ? d->path : NULL;
}

/* Removed: keep its path for the labels of series that outlive it. */
static void note_departed(struct manager *m, uint64_t id, const char *path)
{
	uint64_t evicted = 0;

	if (departed_add(&m->departed, id, path, &evicted) == -ENOMEM)
		log_oom();
	if (evicted)
		drop_series(evicted, m);
}

/* The kernel released a cgroup: its series go after the retention (every
 * scraper sees its final values), or now when nothing reports them or we
 * never knew its name. */
static void on_release(struct manager *m, uint64_t id)
{
	if (!departed_mark_released(&m->departed, id, now_usec(m)))
		drop_series(id, m);
	else if (!metrics_exported(m))
		(void)departed_drop_released(&m->departed, UINT64_MAX, drop_series, m, NULL);
	else
		arm_once(m->departed_source, now_usec(m) + m->cfg.departed_retention_usec);
}

/* Every removal in the v2 hierarchy, from the kernel, with its id. Most are
 * inotify's news too; this catches the ones created and removed before
 * inotify's events about them could be acted on. */
static int on_rmdir_event(const struct wbg_rmdir_event *e, void *userdata)
{
	struct manager *m = userdata;
	struct wbg_cgroup tmp = { .id = e->cgroup_id, .wd_dir = -1, .wd_events = -1, .removed = true };
	char path[WBG_RMDIR_PATH_MAX];
	bool ancestor_only;

	if (e->root != 0)
		return 0;
	if (e->kind == WBG_LIFE_DIRTY) {
		expiry_dirty_event(m, e->cgroup_id);
		return 0;
	}
	if (e->kind == WBG_LIFE_RELEASE) {
		on_release(m, e->cgroup_id);
		return 0;
	}
	if (e->kind == WBG_LIFE_EVIDENCE) {
		manager_dying_evidence(m, e);
		return 0;
	}
	expiry_cgroup_gone(m, e->cgroup_id);
	snprintf(path, sizeof(path), "%s", e->path[0] == '/' ? e->path + 1 : e->path);
	note_departed(m, e->cgroup_id, path);
	if (registry_find_id(&m->reg, e->cgroup_id) || recently_handled(m, e->cgroup_id))
		return 0;
	if (!watch_in_scope(&m->watch, path, &ancestor_only) || ancestor_only)
		return 0;
	tmp.path = path;
	tmp.in_scope = true;
	cgroup_identity_parse(path, &tmp.ident);
	handover_event(m, &tmp, WBG_TRIGGER_RMDIR_BPF);
	if (dirtied_bpf(m) && !manager_dying_holds(m, tmp.id))
		(void)wbg_bpf_forget_cgroup(m->bpf, tmp.id);
	return 0;
}

static int on_rmdir_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	(void)wbg_bpf_rmdir_consume(m->bpf);
	return 0;
}

static void on_tracked(struct wbg_watch *w, struct wbg_cgroup *c)
{
	if (c->populated) {
		note_mount_namespace(w->userdata, c);
		expiry_cgroup_populated(w->userdata, c);
	}
	log_debug("Tracking %s (id %" PRIu64 "%s)", c->path, c->id, c->populated ? ", populated" : "");
}

static void on_populated(struct wbg_watch *w, struct wbg_cgroup *c, bool populated)
{
	struct manager *m = w->userdata;

	if (!populated) {
		expiry_cgroup_emptied(m, c->id);
		handover_event(m, c, WBG_TRIGGER_POPULATED_0);
		return;
	}
	note_mount_namespace(m, c);
	expiry_cgroup_populated(m, c);
	c->settled = false; /* in use again: its next going-away is news */
	if (c->handover && c->handover->n_pending == 0) {
		/* In use again before anyone removed it: that handover is over. */
		struct wbg_handover *h = c->handover;

		c->handover = NULL;
		h->reason = "repopulated before removal";
		if (h->deferred) /* on-evidence: nothing was flushed, and its wb never died */
			h->outcome = WBG_OUTCOME_CLEAN;
		manager_retire(m, h);
	}
}

static void on_removed(struct wbg_watch *w, struct wbg_cgroup *c, bool by_rescan)
{
	struct manager *m = w->userdata;

	note_departed(m, c->id, c->path);
	expiry_cgroup_gone(m, c->id);
	handover_event(m, c, by_rescan ? WBG_TRIGGER_RESCAN : WBG_TRIGGER_REMOVED);
	/* a watched one's set says what to flush on evidence: kept till then */
	if (dirtied_bpf(m) && !manager_dying_holds(m, c->id))
		(void)wbg_bpf_forget_cgroup(m->bpf, c->id);
}

static void arm_watch_retry(struct manager *m);

static const struct wbg_watch_ops watch_ops = {
	.tracked = on_tracked,
	.populated = on_populated,
	.removed = on_removed,
};

#define WATCH_RETRY_USEC (30ULL * 1000 * 1000)

static int on_watch_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	m->watch_retry_source = sd_event_source_disable_unref(m->watch_retry_source);
	log_notice("Rescanning cgroupfs: retrying watches the limit refused");
	if (watch_rescan(&m->watch) == -ENOMEM)
		return sd_event_exit(m->event, -ENOMEM);
	arm_watch_retry(m);
	return 0;
}

/* Only while some cgroup lacks a watch: an idle daemon sleeps. */
static void arm_watch_retry(struct manager *m)
{
	if (m->watch.watch_limit_hit && !m->watch_retry_source &&
	    sd_event_add_time_relative(m->event, &m->watch_retry_source, CLOCK_MONOTONIC, WATCH_RETRY_USEC, 0,
				       on_watch_retry, m) < 0)
		log_warning("Cannot arm the inotify watch retry: cgroups without a watch wait for the next rescan");
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	int r = watch_process(&m->watch);

	if (r == -ENOMEM)
		return sd_event_exit(m->event, r);
	arm_watch_retry(m);
	return 0;
}

static int on_pool(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	struct flush_job *j;

	while ((j = flush_pool_take_done(m->pool))) {
		if (j->result < 0)
			log_warning_errno(j->result, "Flush of %s (%s) failed", j->mount[0] ? j->mount : "block device",
					  j->fstype);
		for (size_t i = 0; i < j->n_waiters; i++) {
			struct wbg_handover *h = find_active(m, j->waiters[i]);

			if (!h || h->n_pending == 0)
				continue; /* timed out meanwhile */
			handover_job_done(h, j);
			if (h->n_pending == 0)
				flush_finished(m, h);
		}
		expiry_job_done(m, j);
		flush_job_free(j);
	}
	return 0;
}

/* Our mount table, or the host's (PID 1's) when we run in a container. */
static const char *mountinfo_path(const struct manager *m)
{
	return m->cfg.host_root[0] ? "/proc/1/mountinfo" : "/proc/self/mountinfo";
}

/* A host path (/dev, /sys/kernel/debug) as reachable from here. */
static char *host_path(const struct manager *m, const char *path)
{
	char *p;

	return asprintf(&p, "%s%s", m->cfg.host_root, path) < 0 ? NULL : p;
}

static int reload_mounts(struct manager *m)
{
	struct wbg_mounts n;
	int r = mountinfo_read(mountinfo_path(m), &n);

	if (r >= 0)
		r = mountinfo_prefix(&n, m->cfg.host_root);
	if (r < 0)
		return log_error_errno(r, "Cannot read %s", mountinfo_path(m));
	mountinfo_free(&m->mounts);
	m->mounts = n;
	return 0;
}

/* Kernel uevents: block devices coming and going. */
static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	for (;;) {
		struct sockaddr_nl from = { 0 };
		unsigned char *buf = NULL;
		struct uevent u;
		int n = nl_recv(m->uevent_sock, &from, &buf, NULL);

		if (n <= 0) {
			free(buf);
			break; /* EAGAIN (nothing more) or an error: try next time */
		}
		/* Only the kernel (port 0) speaks on this group. */
		if (from.nl_pid == 0 && uevent_parse((const char *)buf, (size_t)n, &u) == 0 &&
		    blockdevs_apply(&m->bdevs, &u) > 0)
			log_debug("Block device %s %s (%d:%d)", u.devname ? u.devname : "?", u.action, u.major,
				  u.minor);
		free(buf);
	}
	return 0;
}

static int start_uevents(struct manager *m)
{
	_cleanup_free_ char *dev = host_path(m, "/dev");
	int r;

	if (!dev)
		return log_oom();
	r = blockdevs_init(&m->bdevs, "/sys/dev/block", dev);
	if (r < 0)
		log_warning_errno(r, "Cannot list block devices in /sys/dev/block");
	m->uevent_sock = nl_socket_alloc();
	if (!m->uevent_sock)
		return log_oom();
	nl_socket_disable_seq_check(m->uevent_sock);
	r = nl_connect(m->uevent_sock, NETLINK_KOBJECT_UEVENT);
	if (r < 0)
		return log_warning_errno(EPERM, "Cannot listen to kernel uevents: %s", nl_geterror(r));
	r = nl_socket_add_membership(m->uevent_sock, 1 /* the kernel's group */);
	if (r >= 0)
		r = nl_socket_set_nonblocking(m->uevent_sock);
	if (r < 0)
		return log_warning_errno(EPERM, "Cannot join the kernel uevent group: %s", nl_geterror(r));
	r = sd_event_add_io(m->event, &m->uevent_source, nl_socket_get_fd(m->uevent_sock), EPOLLIN, on_uevent, m);
	if (r < 0)
		return log_warning_errno(r, "Cannot watch uevents");
	return 0;
}

/* The kernel flags /proc/self/mountinfo with POLLPRI when the table changes. */
static int on_mountinfo(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	(void)reload_mounts(m);
	return 0;
}

/* A handover for a cgroup already gone whose targets are known: redone
 * after a restart, then the cleanup cycle, like any removal. */
static int start_recovered(struct manager *m, uint64_t cgroup_id, const char *path, const dev_t *devs,
			   const bool *bdev, size_t n, uint64_t *ret_id)
{
	struct wbg_handover *h = handover_start(m, cgroup_id, path, WBG_TRIGGER_RECOVERED);
	struct wbg_plan plan = { 0 };
	uint64_t id;
	int r;

	if (!h)
		return -ENOMEM;
	h->t_removed = h->t_trigger;
	id = h->id;
	r = handover_plan_recorded(&m->cfg, &m->mounts, &m->bdevs, devs, bdev, n, &plan);
	if (r >= 0 && plan.n > 0)
		r = submit_plan(m, h, &plan);
	plan_free(&plan);
	if (h->n_pending == 0) {
		h->outcome = r < 0 ? WBG_OUTCOME_FAILED : WBG_OUTCOME_NO_TARGETS;
		h->reason = r < 0 ? "planning failed" : "its filesystems are gone";
		manager_retire(m, h);
	} else
		arm_timeout(m, h);
	*ret_id = id;
	return 0;
}

/* The previous wbguardd's handovers that were in flight when it stopped:
 * their cgroups may still be dying with data dirty, and nothing else would
 * say so now. Their cgroup ids go to *covered, sorted. */
static int recover_pending(struct manager *m, uint64_t **covered, size_t *n_covered)
{
	struct wbg_pending *v = NULL;
	size_t n = 0;
	int r = pending_load(m->cfg.state_dir, &v, &n);

	if (r < 0)
		return r == -ENOMEM ? log_oom() : log_warning_errno(r, "Cannot read %s", m->cfg.state_dir);
	*covered = calloc(n + 1, sizeof(**covered));
	if (!*covered) {
		pending_free(v, n);
		free(v);
		return log_oom();
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		uint64_t id = 0;

		pending_drop(m->cfg.state_dir, v[i].id);
		r = start_recovered(m, v[i].cgroup_id, v[i].path, v[i].devs, v[i].bdev, v[i].n, &id);
		(*covered)[(*n_covered)++] = v[i].cgroup_id;
		log_notice("Handover %" PRIu64 " of %s was in flight when the previous wbguardd stopped; flushing its %zu "
			   "targets again as handover %" PRIu64,
			   v[i].id, v[i].path, v[i].n, id);
	}
	pending_free(v, n);
	free(v);
	if (*n_covered)
		qsort(*covered, *n_covered, sizeof(**covered), cmp_leading_u64);
	return r;
}

/* Dying wbs that still have dirty IO and that no pending record named:
 * cgroups removed while no wbguardd ran, or before the killed one had
 * recorded their handover. wb_stats (6.10+) names them by cgroup inode and
 * bdi; a cgroup inode that is no longer in cgroupfs is a dying cgroup's.
 * Their paths are gone, so their records say "(removed while not
 * watching)". */
static int recover_dying(struct manager *m, const uint64_t *covered, size_t n_covered)
{
	_cleanup_free_ struct wbg_dirty_wb *wbs = NULL;
	_cleanup_free_ uint64_t *live = NULL;
	size_t n = 0, n_live = 0;
	int r = wbstats_dirty_wbs(m->debugfs, &wbs, &n);

	if (r == -ENOENT)
		return 0; /* no wb_stats: before 6.10, or no debugfs */
	if (r < 0)
		return r == -ENOMEM ? log_oom() : r;
	if (n == 0)
		return 0;
	r = cg_list_ids(m->cfg.cgroup_root, m->cfg.max_depth, &live, &n_live);
	if (r < 0)
		return r == -ENOMEM ? log_oom() : log_warning_errno(r, "Cannot list the cgroups under %s", m->cfg.cgroup_root);
	for (size_t i = 0; i < n; i++) {
		dev_t devs[8];
		bool bdev[8] = { false };
		size_t k = 0;
		uint64_t id = 0, cg = wbs[i].cg_ino;

		if (cg == 0 || wbstats_set_has(live, n_live, cg) || wbstats_set_has(covered, n_covered, cg))
			continue;
		/* every device of that cgroup with dirty IO, once */
		for (size_t j = i; j < n && k < ELEMENTSOF(devs); j++)
			if (wbs[j].cg_ino == cg && wbs[j].has_dev) {
				devs[k++] = makedev(wbs[j].major, wbs[j].minor);
				wbs[j].cg_ino = 0; /* taken */
			}
		if (k == 0)
			continue; /* bdis not named by a device: nothing we can open */
		r = start_recovered(m, cg, "(removed while not watching)", devs, bdev, k, &id);
		if (r < 0)
			return r;
		log_notice("A dying cgroup (id %" PRIu64 ") still has dirty data on %zu device(s); flushing it as handover "
			   "%" PRIu64, cg, k, id);
	}
	return 0;
}

int manager_reload(struct manager *m)
{
	struct wbg_config c;
	int r;

	config_init(&c);
	r = config_load(&c, m->config_path);
	if (r < 0) {
		config_done(&c);
		return log_error_errno(r, "Reload of %s failed; keeping the running configuration", m->config_path);
	}
	/* The watched tree and the pool size stay as started. */
	snprintf(c.cgroup_root, sizeof(c.cgroup_root), "%s", m->cfg.cgroup_root);
	config_done(&m->cfg);
	m->cfg = c;
	log_set_max_level(m->log_level_override >= 0 ? m->log_level_override : m->cfg.log_level);
	if (m->pool)
		flush_pool_set_interval(m->pool, m->cfg.fs_interval_usec);
	m->dying.params.max = m->cfg.watch_max;
	m->dying.params.max_age_usec = m->cfg.watch_max_age_usec;
	m->dying.params.reflush_usec = m->cfg.reflush_usec;
	log_info("Reloaded %s", m->config_path);
	return 0;
}

void manager_set_log_level(struct manager *m, int level)
{
	m->log_level_override = level;
	log_set_max_level(level);
}

static int on_waiter_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_flush_waiter *w = userdata;

	reply_flush(w->call, w->handover_id, "pending", "still flushing when the caller's timeout came");
	waiter_free(w);
	return 0;
}

void manager_drop_waiters(struct manager *m, sd_bus *bus)
{
	struct wbg_flush_waiter *w = m->waiters, *next;
	unsigned n = 0;

	for (; w; w = next) {
		next = w->next;
		if (sd_bus_message_get_bus(w->call) != bus)
			continue;
		waiter_free(w);
		n++;
	}
	if (n)
		log_debug("Dropped %u flush waiter(s) of a control connection that closed", n);
}

struct path_lookup {
	const char *path;
	struct wbg_handover *found;
};

static void match_active(const void *nodep, VISIT which, void *closure)
{
	struct wbg_handover *h = *(struct wbg_handover *const *)nodep;
	struct path_lookup *l = closure;

	if ((which == postorder || which == leaf) && strcmp(h->path, l->path) == 0 &&
	    (!l->found || h->id > l->found->id))
		l->found = h;
}

int manager_flush_cgroup(struct manager *m, const char *path, uint64_t timeout_usec, sd_bus_message *call,
			 sd_bus_error *error)
{
	char rel[PATH_MAX];
	struct path_lookup l = { .path = rel };
	const struct wbg_recent *done;
	struct wbg_flush_waiter *w;
	struct wbg_cgroup *c;
	int r;

	r = oci_cgroup_path(path, rel, sizeof(rel));
	if (r < 0)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
					 "'%s' is not a cgroup path under the cgroupfs root", path);
	/* What inotify has queued first: a removal the caller just made is
	 * then known. */
	if (watch_process(&m->watch) == -ENOMEM)
		return -ENOMEM;
	c = registry_find_path(&m->reg, rel);
	if (c && !c->removed && c->in_scope) {
		if (!c->handover) {
			uint64_t id = m->ids.last + 1;

			handover_event(m, c, WBG_TRIGGER_API);
			if (!c->handover) { /* over already (clean, flush disabled...) */
				done = recent_by(m, id, "");
				reply_flush(call, id, done ? done->outcome : "unknown", done ? done->reason : NULL);
				return 1;
			}
		}
		l.found = c->handover;
	} else
		twalk_r(m->active, match_active, &l);
	if (!l.found) {
		done = recent_by(m, 0, rel);
		if (!done)
			return sd_bus_error_setf(error, "io.wbguard1.NoSuchCgroup",
						 "wbguardd does not track /%s and has no recent handover of it", rel);
		reply_flush(call, done->id, done->outcome, done->reason);
		return 1;
	}
	if (l.found->t_flushed || (l.found->n_pending == 0 && l.found->outcome != WBG_OUTCOME_PENDING)) {
		reply_flush(call, l.found->id, wbg_outcome_to_string(l.found->outcome), l.found->reason);
		return 1;
	}
	if (timeout_usec == 0) {
		reply_flush(call, l.found->id, "pending", "not waited for");
		return 1;
	}
	if (m->n_waiters >= WBG_FLUSH_WAITERS_MAX)
		return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED, "Too many callers waiting for flushes");
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct wbg_flush_waiter){ .m = m, .call = sd_bus_message_ref(call), .handover_id = l.found->id,
					.next = m->waiters };
	m->waiters = w;
	m->n_waiters++;
	r = sd_event_add_time_relative(m->event, &w->timer, CLOCK_MONOTONIC, timeout_usec, 0, on_waiter_timeout, w);
	if (r < 0) {
		waiter_free(w);
		return r;
	}
	return 1;
}

int manager_register_container(struct manager *m, const char *id, const char *path, const char *bundle,
			       const char *const *keys, const char *const *values, size_t n, sd_bus_error *error)
{
	char rel[PATH_MAX];
	struct wbg_cgroup *c;
	const struct wbg_container *ct;
	int r;

	if (!*id || strlen(id) > 1024)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "container id: empty or too long");
	r = oci_cgroup_path(path, rel, sizeof(rel));
	if (r < 0)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
					 "cgroup '%s' (container %s) is not a cgroup path under the cgroupfs root", path, id);
	if (n > WBG_CONTAINER_ANNOTATIONS_MAX)
		return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED, "container %s: more than %d annotations",
					 id, WBG_CONTAINER_ANNOTATIONS_MAX);
	r = containers_register(&m->containers, rel, id, bundle, keys, values, n);
	if (r < 0)
		return r;
	ct = containers_find(&m->containers, rel);
	log_info("Registered container %s: cgroup /%s%s%s%s%s", id, rel, ct->pod ? ", pod " : "",
		 ct->pod ? (ct->namespace ? ct->namespace : "") : "", ct->pod ? "/" : "", ct->pod ? ct->pod : "");
	(void)watch_process(&m->watch); /* its cgroup is likely news to us */
	c = registry_find_path(&m->reg, rel);
	if (c && c->in_scope && !c->removed)
		expiry_container_registered(m, c);
	return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	if (si->ssi_signo == SIGHUP) {
		(void)manager_reload(m);
		return 0;
	}
	log_info("Received %s, exiting", strsignal(si->ssi_signo));
	return sd_event_exit(m->event, 0);
}

int manager_new(const char *config_path, const char *cgroup_root_override, bool no_bpf, struct manager **ret)
{
	struct manager *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return log_oom();
	m->mountinfo_fd = -EBADF;
	m->log_level_override = -1;
	config_init(&m->cfg);
	{
		static const double reaction[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5 };
		static const double duration[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60 };

		hist_init(&m->reaction, reaction, ELEMENTSOF(reaction));
		hist_init(&m->flush_duration, duration, ELEMENTSOF(duration));
	}
	m->config_path = strdup(config_path);
	m->control_fd = -EBADF;
	if (!m->config_path || departed_init(&m->departed, WBG_STATS_CGROUPS_MAX) < 0 ||
	    containers_init(&m->containers, WBG_CONTAINERS_MAX) < 0) {
		manager_free(m);
		return log_oom();
	}
	r = config_load(&m->cfg, config_path);
	if (r < 0) {
		manager_free(m);
		return log_error_errno(r, "Not starting with a bad configuration (%s)", config_path);
	}
	if (cgroup_root_override)
		snprintf(m->cfg.cgroup_root, sizeof(m->cfg.cgroup_root), "%s", cgroup_root_override);
	if (no_bpf)
		m->cfg.bpf = false;
	m->debugfs = host_path(m, "/sys/kernel/debug");
	if (!m->debugfs) {
		manager_free(m);
		return log_oom();
	}
	log_set_max_level(m->cfg.log_level);
	*ret = m;
	return 0;
}

int manager_start(struct manager *m)
{
	_cleanup_free_ char *tracing = NULL;
	char path[PATH_MAX];
	int r;

	r = sd_event_default(&m->event);
	if (r < 0)
		return log_error_errno(r, "Cannot allocate the event loop");
	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	r = sd_event_add_signal(m->event, NULL, SIGTERM, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGINT, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGHUP, on_signal, m);
	if (r < 0)
		return log_error_errno(r, "Cannot handle signals");
	r = sd_event_set_watchdog(m->event, true);
	if (r < 0)
		log_warning_errno(r, "Cannot feed the service watchdog");

	tracing = host_path(m, "/sys/kernel/tracing");
	if (!tracing)
		return log_oom();
	if (m->cfg.host_root[0])
		wbg_bpf_set_tracefs(tracing);
	if (m->cfg.bpf) {
		r = wbg_bpf_open(WBG_BPF_ALL, m->cfg.max_inodes, m->cfg.bpf_dirtied_cgroups, &m->bpf);
		if (r < 0)
			log_warning_errno(r, "BPF unavailable; flushing every filesystem instead of what each cgroup dirtied");
	}
	m->mitigating = m->cfg.mitigation != WBG_MITIGATION_OFF;
	evidence_read_static("/proc/kallsyms", tracing,
			     btf_struct_has_member("trace_event_raw_flush_foreign", "dev"), &m->evidence);
	m->dying_wb = m->bdev_flush = _WBG_VERDICT_MAX; /* so the first refresh logs */
	manager_refresh_verdict(m);

	r = reload_mounts(m);
	if (r < 0)
		return r;
	m->mountinfo_fd = open(mountinfo_path(m), O_RDONLY | O_CLOEXEC);
	if (m->mountinfo_fd >= 0) {
		r = sd_event_add_io(m->event, &m->mountinfo_source, m->mountinfo_fd, EPOLLPRI, on_mountinfo, m);
		if (r < 0)
			log_warning_errno(r, "Cannot watch the mount table: mounts stay as found at start");
	}

	(void)start_uevents(m); /* without them, block devices stay as found at start */

	r = flush_pool_new(m->cfg.workers, "/sys/dev/block", &m->pool);
	if (r < 0)
		return log_error_errno(r, "Cannot start flush workers");
	flush_pool_set_interval(m->pool, m->cfg.fs_interval_usec);
	r = sd_event_add_io(m->event, &m->pool_source, flush_pool_fd(m->pool), EPOLLIN, on_pool, m);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the flush pool");
	/* armed while handovers wait for them (arm_once) */
	r = sd_event_add_time(m->event, &m->cleanup_source, CLOCK_MONOTONIC, 0, 10 * 1000, on_cleanup, m);
	if (r >= 0)
		r = sd_event_source_set_enabled(m->cleanup_source, SD_EVENT_OFF);
	if (r >= 0)
		r = sd_event_add_time(m->event, &m->verify_source, CLOCK_MONOTONIC, 0, 10 * 1000, on_verify, m);
	if (r >= 0)
		r = sd_event_source_set_enabled(m->verify_source, SD_EVENT_OFF);
	if (r >= 0)
		r = sd_event_add_time(m->event, &m->departed_source, CLOCK_MONOTONIC, 0, 1000 * 1000, on_departed_due, m);
	if (r >= 0)
		r = sd_event_source_set_enabled(m->departed_source, SD_EVENT_OFF);
	if (r >= 0)
		r = sd_event_add_time_relative(m->event, &m->verdict_source, CLOCK_MONOTONIC, VERDICT_REFRESH_USEC,
					       1000 * 1000, on_verdict_timer, m);
	if (r < 0)
		return log_error_errno(r, "Cannot add the cleanup timers");

	if (m->cfg.scratch_cycle) {
		const char *parent = NULL;

		/* the first watched subtree that exists: writable without
		 * CAP_DAC_OVERRIDE, unlike the root */
		for (unsigned i = 0; i < m->cfg.n_roots && !parent; i++) {
			snprintf(path, sizeof(path), "%s/%s", m->cfg.cgroup_root, m->cfg.roots[i]);
			if (*m->cfg.roots[i] && access(path, F_OK) == 0)
				parent = m->cfg.roots[i];
		}
		r = scratch_open(m->cfg.cgroup_root, m->cfg.scratch_cgroup, parent, &m->scratch);
		if (r < 0)
			log_warning_errno(r, "No scratch cgroup: the kernel's offline-wb cleanup will not be re-run");
	}

	snprintf(path, sizeof(path), "%s", m->cfg.state_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		log_warning_errno(errno, "Cannot create %s", path);
	/* above every id a previous run reserved or left pending */
	ids_open(&m->ids, m->cfg.state_dir, pending_max_id(m->cfg.state_dir));
	r = expiry_start(m);
	if (r < 0)
		return r;
	(void)records_open(&m->records, m->cfg.state_dir, m->cfg.records_max_bytes);

	r = watch_init(&m->watch, m->cfg.cgroup_root, m->cfg.roots, m->cfg.n_roots, &m->reg, &watch_ops, m);
	if (r < 0)
		return r;
	m->watch.max_depth = m->cfg.max_depth;
	if (m->scratch.path) {
		m->watch.exclude = strdup(m->scratch.path);
		if (!m->watch.exclude)
			return log_oom();
	}
	r = sd_event_add_io(m->event, &m->inotify_source, m->watch.fd, EPOLLIN, on_inotify, m);
	if (r < 0)
		return log_error_errno(r, "Cannot watch inotify");
	r = watch_rescan(&m->watch);
	if (r < 0)
		return r;
	/* After the watch exists: a cgroup removed from here on is its news,
	 * one removed before is dying by now. */
	{
		_cleanup_free_ uint64_t *covered = NULL;
		size_t n_covered = 0;

		r = recover_pending(m, &covered, &n_covered);
		if (r != -ENOMEM)
			r = recover_dying(m, covered, n_covered);
		if (r == -ENOMEM)
			return r;
	}
	arm_watch_retry(m);
	r = textfile_new(&m->textfile);
	if (r < 0)
		return log_error_errno(r, "Cannot start the metrics textfile writer");
	r = metrics_http_start(m);
	if (r < 0)
		return r;
	if (m->bpf && wbg_bpf_rmdir_open(m->bpf, on_rmdir_event, m) >= 0) {
		r = sd_event_add_io(m->event, &m->rmdir_source, wbg_bpf_rmdir_fd(m->bpf), EPOLLIN, on_rmdir_io, m);
		if (r < 0)
			log_warning_errno(r, "Cannot watch the BPF removal ring: inotify alone sees removals");
	}
	r = manager_dying_start(m);
	if (r < 0)
		return r;
	(void)watch_systemd_start(m);
	r = control_start(m);
	if (r < 0)
		return r;
	log_info("Watching %zu cgroups under %s; BPF %s; mitigation %s", m->reg.n, m->cfg.cgroup_root,
		 m->bpf ? "on" : "off", m->mitigating ? "on" : "off");
	m->ready = true;
	(void)sd_notify(false, "READY=1\nSTATUS=Watching cgroups");
	return 0;
}

int manager_run(struct manager *m)
{
	return sd_event_loop(m->event);
}

static void count_active(const void *nodep, VISIT which, void *closure)
{
	if (which == postorder || which == leaf)
		++*(size_t *)closure;
}

static void collect_active(const void *nodep, VISIT which, void *closure)
{
	struct wbg_handover ***v = closure;

	if (which == postorder || which == leaf)
		*(*v)++ = *(struct wbg_handover *const *)nodep;
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	(void)sd_notify(false, "STOPPING=1");
	while (m->waiters) {
		reply_flush(m->waiters->call, m->waiters->handover_id, "pending", "daemon stopping");
		waiter_free(m->waiters);
	}
	control_stop(m);
	watch_systemd_stop(m);
	metrics_http_stop(m);
	sd_event_source_disable_unref(m->watch_retry_source);
	sd_event_source_disable_unref(m->departed_source);
	sd_event_source_disable_unref(m->verdict_source);
	sd_event_source_disable_unref(m->rmdir_source);
	sd_event_source_disable_unref(m->inotify_source);
	sd_event_source_disable_unref(m->pool_source);
	/* queued handovers are in m->active too: recorded below */
	m->cleanup_source = sd_event_source_disable_unref(m->cleanup_source);
	m->verify_source = sd_event_source_disable_unref(m->verify_source);
	m->cleanup_head = m->cleanup_tail = m->verify_head = m->verify_tail = NULL;
	/* watched ones end interrupted (the next start's recovery flushes
	 * what is still dirty) */
	manager_dying_stop(m);
	sd_event_source_disable_unref(m->mountinfo_source);
	sd_event_source_disable_unref(m->uevent_source);
	nl_socket_free(m->uevent_sock);
	blockdevs_done(&m->bdevs);
	/* Handovers still open are recorded as they stand, not dropped. */
	{
		size_t n = 0;
		struct wbg_handover **v, **p;

		twalk_r(m->active, count_active, &n);
		v = calloc(n + 1, sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
		p = v;
		if (v) {
			twalk_r(m->active, collect_active, &p);
			for (struct wbg_handover **q = v; q < p; q++) {
				if ((*q)->n_pending) {
					(*q)->outcome = WBG_OUTCOME_INTERRUPTED;
					(*q)->reason = "daemon stopped during the flush";
					(*q)->pending_saved = false; /* kept: the next start redoes it */
				} else if ((*q)->deferred && (*q)->outcome == WBG_OUTCOME_PENDING) {
					/* on-evidence, dirty and emptied, not yet removed:
					 * nothing was flushed */
					(*q)->outcome = WBG_OUTCOME_INTERRUPTED;
					(*q)->reason = "daemon stopped before its removal";
				}
				manager_retire(m, *q);
			}
			free(v);
		}
	}
	/* Last, after every handover is retired (a retired one may not
	 * boost any more, but nothing may hold it after this): the admin's
	 * value back and the state file gone. */
	if (m->event) {
		expiry_stop(m);
		metrics_textfile_update(m, true);
	}
	textfile_free(m->textfile, 2ULL * 1000 * 1000); /* a stalled disk does not hold the exit */
	flush_pool_free(m->pool);
	watch_done(&m->watch);
	registry_free(&m->reg);
	departed_free(&m->departed);
	containers_free(&m->containers);
	for (size_t i = 0; i < WBG_RECENT_MAX; i++) {
		free(m->recent[i].path);
		free(m->recent[i].json);
	}
	scratch_close(&m->scratch);
	wbg_bpf_free(m->bpf);
	mountinfo_free(&m->mounts);
	if (m->mountinfo_fd >= 0)
		close(m->mountinfo_fd);
	records_close(&m->records);
	sd_event_unref(m->event);
	config_done(&m->cfg);
	free(m->config_path);
	free(m->debugfs);
	free(m);
	return NULL;
}
