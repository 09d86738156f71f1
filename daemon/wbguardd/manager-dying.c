/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <search.h>

#include "bpf-programs.h"
#include "dying.h"
#include "log.h"
#include "manager-dying.h"
#include "manager.h"
#include "wbstats.h"

static uint64_t now_usec(const struct manager *m)
{
	uint64_t t = 0;

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &t);
	return t;
}

/* The next tick at usec, or sooner if one is armed sooner. */
static void schedule(struct manager *m, uint64_t usec)
{
	int enabled = SD_EVENT_OFF;
	uint64_t armed = 0;

	if (!m->dying_source)
		return;
	if (sd_event_source_get_enabled(m->dying_source, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
	    sd_event_source_get_time(m->dying_source, &armed) >= 0 && armed <= usec)
		return;
	if (sd_event_source_set_time(m->dying_source, usec) < 0 ||
	    sd_event_source_set_enabled(m->dying_source, SD_EVENT_ONESHOT) < 0)
		log_warning("Cannot arm the dying-wb timer: watched cgroups wait for the next event");
}

static struct wbg_handover *active_by_cgroup(const struct manager *m, uint64_t cgroup_id);

static int op_arm(void *userdata, uint64_t cgroup_id, bool stall_only)
{
	struct manager *m = userdata;
	int r = wbg_bpf_dying_arm(m->bpf, cgroup_id, stall_only);

	if (r < 0)
		log_debug_errno(r, "Cannot arm the evidence of cgroup %" PRIu64 ": its drain and max_age still cover it",
				cgroup_id);
	return r;
}

static void op_disarm(void *userdata, uint64_t cgroup_id)
{
	struct manager *m = userdata;

	(void)wbg_bpf_dying_forget(m->bpf, cgroup_id);
}

static int op_flush(void *userdata, uint64_t cgroup_id, void *cookie, bool evidence)
{
	struct manager *m = userdata;
	struct wbg_handover *h = cookie;
	int r;

	h->flushes++;
	r = manager_flush_handover(m, h, evidence);
	if (r < 0) {
		h->flushes--;
		return r;
	}
	if (h->n_pending == 0) /* nothing to write after all */
		dying_flush_done(&m->dying, cgroup_id, h->n_failed == 0, now_usec(m));
	return 0;
}

static int op_cleanup(void *userdata)
{
	struct manager *m = userdata;
	int r;

	if (!m->cfg.scratch_cycle || !m->scratch.path)
		return -EOPNOTSUPP;
	r = scratch_cycle(&m->scratch, ++m->cleanup_seq);
	if (r < 0) {
		m->cleanup_failures++;
		log_warning_errno(r, "Scratch memcg cycle for the watched dying wbs failed");
		return r;
	}
	m->cleanup_cycles++;
	return 0;
}

static int op_dirty(void *userdata, uint64_t **ret, size_t *ret_n)
{
	struct manager *m = userdata;

	return wbstats_dirty_cgroups(m->debugfs, ret, ret_n);
}

static void op_done(void *userdata, void *cookie, const struct dying_result *res)
{
	struct manager *m = userdata;
	struct wbg_handover *h = cookie;
	uint64_t now = now_usec(m);

	h->evidence = res->evidence;
	h->t_evidence = res->t_evidence;
	if (res->cleanup_done) {
		h->cleanup_done = true;
		h->t_cleanup = res->t_cleanup;
	}
	h->verify = res->verify;
	if (res->verify >= 0)
		h->t_verified = now;
	if (res->verify == 0) {
		m->verify_dirty++;
		log_notice("A dying wb of %s is still dirty after its flush at max_age; no longer watched", h->path);
	}
	if (h->outcome == WBG_OUTCOME_PENDING) {
		if (res->end == DYING_END_DROPPED && m->dying_stopping) {
			h->outcome = WBG_OUTCOME_INTERRUPTED;
			h->reason = "daemon stopped while its dying wb was watched";
		} else if (res->flushes) {
			h->outcome = h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
			h->reason = res->expired ? "not drained at watch_max_age_sec: flushed" : NULL;
		} else {
			h->outcome = WBG_OUTCOME_DRAINED;
			h->reason = res->end == DYING_END_DROPPED	? "released by the kernel while watched"
				    : res->end == DYING_END_UNVERIFIED ? "no wb_stats: taken as drained after one expiry"
									 : "its dying wb drained by itself; no flush needed";
		}
	}
	if (wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED)
		(void)wbg_bpf_forget_cgroup(m->bpf, h->cgroup_id);
	manager_retire(m, h);
}

static const struct dying_ops ops = {
	.arm = op_arm,
	.disarm = op_disarm,
	.flush = op_flush,
	.cleanup = op_cleanup,
	.dirty_cgroups = op_dirty,
	.done = op_done,
};

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	uint64_t next = dying_tick(&m->dying, now_usec(m));

	if (next)
		schedule(m, next);
	return 0;
}

/* Without wb_stats a wb counts as drained after the kernel's own expiry
 * and one writeback interval, with room to spare. */
static uint64_t drain_after_usec(void)
{
	unsigned expire = 3000, writeback = 500;
	FILE *f;

	if ((f = fopen("/proc/sys/vm/dirty_expire_centisecs", "re"))) {
		if (fscanf(f, "%u", &expire) != 1)
			expire = 3000;
		fclose(f);
	}
	if ((f = fopen("/proc/sys/vm/dirty_writeback_centisecs", "re"))) {
		if (fscanf(f, "%u", &writeback) != 1)
			writeback = 500;
		fclose(f);
	}
	return (uint64_t)(expire + writeback) * 10000 * 3 / 2;
}

bool manager_dying_on_evidence(const struct manager *m)
{
	return m->cfg.flush_mode == WBG_FLUSH_ON_EVIDENCE && wbg_bpf_dying_supported(m->bpf) &&
	       (wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED);
}

int manager_dying_start(struct manager *m)
{
	struct dying_params p = {
		.max = m->cfg.watch_max,
		.drain_after_usec = drain_after_usec(),
		.max_age_usec = m->cfg.watch_max_age_usec,
		.reflush_usec = m->cfg.reflush_usec,
	};
	int r;

	dying_init(&m->dying, &p, &ops, m);
	r = sd_event_add_time(m->event, &m->dying_source, CLOCK_MONOTONIC, 0, 100 * 1000, on_tick, m);
	if (r < 0)
		return log_error_errno(r, "Cannot add the dying-wb timer");
	r = sd_event_source_set_enabled(m->dying_source, SD_EVENT_OFF);
	if (r < 0)
		return log_error_errno(r, "Cannot set up the dying-wb timer");
	if (m->cfg.flush_mode == WBG_FLUSH_EAGER)
		log_info("Flush mode: eager (every removal with dirty data is flushed)");
	else if (manager_dying_on_evidence(m))
		log_info("Flush mode: on-evidence (removals watched; flushed when a live cgroup dirties their inodes)");
	else
		log_warning("Flush mode: eager; on-evidence needs the BPF programs that see foreign dirtying and "
			    "what each cgroup dirtied, and this kernel or configuration has not got them");
	return 0;
}

int manager_dying_watch(struct manager *m, struct wbg_handover *h)
{
	int r = dying_add(&m->dying, h->cgroup_id, h, now_usec(m));

	if (r == -ENOSPC)
		log_warning("%zu dying cgroups watched ([flush] watch_max): %s is flushed now instead",
			    dying_count(&m->dying), h->path);
	if (r < 0)
		return r;
	h->watched = true;
	log_debug("Watching the dying wb of %s (id %" PRIu64 ")", h->path, h->cgroup_id);
	schedule(m, now_usec(m) + DYING_TICK_USEC);
	return 0;
}

bool manager_dying_holds(const struct manager *m, uint64_t cgroup_id)
{
	return dying_has(&m->dying, cgroup_id);
}

bool manager_dying_flushed(struct manager *m, struct wbg_handover *h)
{
	if (!h->watched || !dying_has(&m->dying, h->cgroup_id))
		return false;
	dying_flush_done(&m->dying, h->cgroup_id, h->n_failed == 0 && h->outcome != WBG_OUTCOME_TIMEOUT,
			 now_usec(m));
	/* the stall lasts until the cleanup has run: at once */
	schedule(m, now_usec(m));
	return true;
}

void manager_dying_evidence(struct manager *m, const struct wbg_rmdir_event *e)
{
	const struct wbg_handover *h = active_by_cgroup(m, e->cgroup_id);
	int r = dying_evidence(&m->dying, (uint64_t)e->cgroup_id, now_usec(m));

	if (r < 0) {
		log_debug("Foreign dirtying of a dying wb of cgroup %" PRIu64 " no longer watched",
			  (uint64_t)e->cgroup_id);
		return;
	}
	if (e->level == 1)
		log_info("Evidence: a foreign flush for cgroup %" PRIu64 " to the dying wb of %s got -ENOENT",
			 (uint64_t)e->dirtier, h ? h->path : "a removed cgroup");
	else
		log_info("Evidence: cgroup %" PRIu64 " dirtied inode %" PRIu64 " on %u:%u, still on the dying wb of %s",
			 (uint64_t)e->dirtier, (uint64_t)e->ino, WBG_KDEV_MAJOR(e->dev), WBG_KDEV_MINOR(e->dev),
			 h ? h->path : "a removed cgroup");
	/* deferred: due reflush_sec after the last flush */
	schedule(m, now_usec(m) + (r > 0 ? m->dying.params.reflush_usec : DYING_TICK_USEC));
}

void manager_dying_release(struct manager *m, uint64_t cgroup_id)
{
	dying_release(&m->dying, cgroup_id);
}

void manager_dying_stop(struct manager *m)
{
	m->dying_stopping = true;
	dying_done(&m->dying);
	m->dying_source = sd_event_source_disable_unref(m->dying_source);
}

struct by_cgroup {
	uint64_t cgroup_id;
	const struct wbg_handover *found;
};

static void match_cgroup(const void *nodep, VISIT which, void *closure)
{
	const struct wbg_handover *h = *(const struct wbg_handover *const *)nodep;
	struct by_cgroup *b = closure;

	if ((which == postorder || which == leaf) && h->cgroup_id == b->cgroup_id && h->watched)
		b->found = h;
}

static struct wbg_handover *active_by_cgroup(const struct manager *m, uint64_t cgroup_id)
{
	struct by_cgroup b = { cgroup_id, NULL };

	twalk_r(m->active, match_cgroup, &b);
	return (struct wbg_handover *)b.found;
}

void manager_dying_metrics(FILE *f, const struct manager *m)
{
	const struct dying_stats *s = &m->dying.stats;

	metric_family(f, "wbguard_flush_mode", "gauge", "The flush mode in effect: 1 on its mode.");
	fprintf(f, "wbguard_flush_mode{mode=\"eager\"} %d\n", !manager_dying_on_evidence(m));
	fprintf(f, "wbguard_flush_mode{mode=\"on-evidence\"} %d\n", manager_dying_on_evidence(m));
	metric_value(f, "wbguard_dying_watched", "gauge", "Removed cgroups whose dying wbs are watched now (on-evidence).",
		     (double)dying_count(&m->dying));
	metric_counter(f, "wbguard_dying_watch_full_total",
		       "Removals flushed eagerly because [flush] watch_max cgroups were watched.", s->refused_full);
	metric_counter(f, "wbguard_dying_evidence_total",
		       "Foreign dirtyings of a watched dying wb's inodes reported by BPF (the stall's first sign).",
		       s->evidence);
	metric_counter(f, "wbguard_dying_evidence_flushes_total",
		       "Flushes started for watched dying cgroups (on evidence, or at watch_max_age_sec).", s->flushes);
	metric_counter(f, "wbguard_dying_expired_total",
		       "Watched dying cgroups flushed because they had not drained by watch_max_age_sec.", s->expired);
	metric_family(f, "wbguard_dying_ended_total", "counter", "Watched dying cgroups no longer watched, by how.");
	for (unsigned e = 0; e <= DYING_END_DROPPED; e++)
		fprintf(f, "wbguard_dying_ended_total{end=\"%s\"} %" PRIu64 "\n", dying_end_to_string(e), s->ended[e]);
}
