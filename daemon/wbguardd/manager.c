/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <systemd/sd-journal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "wbg-handover.h"
#include "wbg-flush.h"
#include "wbg-base.h"
#include "wbg-config.h"
#include "manager.h"
#include "wbg-metrics.h"
#include "timer-util.h"

/* New evidence comes with use (a retired handover refreshes it too); a
 * reader never does: the timer keeps what a scrape shows current. */
#define VERDICT_REFRESH_USEC (10ULL * 1000 * 1000)

/* A timer's lateness: usec is when it was due. Its accuracy (up to 10 ms
 * for the lifecycle's and expiry's) is part of the figure. */
static void note_lag(struct manager *m, uint64_t usec)
{
	uint64_t now = manager_now_usec(m);

	hist_observe(&m->loop_lag, now > usec ? (double)(now - usec) / 1e6 : 0);
}

static int on_verdict_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	note_lag(m, usec);
	manager_refresh_verdict(m);
	/* the textfile too, once a minute, so that its timestamp says the
	 * daemon is alive while nothing happens (a dead one's goes stale) */
	if (manager_now_usec(m) - m->textfile_written_usec >= 60ULL * 1000 * 1000)
		metrics_textfile_update(m, true);
	timer_arm_once(s, manager_now_usec(m) + VERDICT_REFRESH_USEC);
	return 0;
}

static int on_lifecycle_due(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	note_lag(m, usec);
	lifecycle_tick(&m->lifecycle);
	return 0;
}

static int on_expiry_due(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	note_lag(m, usec);
	expiry_tick(&m->expiry);
	return 0;
}

static int on_ring_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	(void)wbg_bpf_ring_consume(m->bpf);
	return 0;
}

static void arm_watch_retry(struct manager *m);

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
	    sd_event_add_time_relative(m->event, &m->watch_retry_source, CLOCK_MONOTONIC, m->cfg.watch_retry_usec, 0,
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
		lifecycle_job_done(&m->lifecycle, j);
		expiry_job_done(&m->expiry, j);
		flush_job_free(j);
	}
	return 0;
}
void manager_set_log_level(struct manager *m, int level)
{
	m->log_level_override = level;
	log_set_max_level(level);
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
	/* parts not started yet hold no descriptor */
	m->watch.fd = m->host.mountinfo_fd = m->control.fd = m->node_lock_fd = m->nri_fd = -EBADF;
	m->log_level_override = -1;
	{
		static const double lag[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };

		hist_init(&m->loop_lag, lag, ELEMENTSOF(lag));
	}
	config_init(&m->cfg);
	m->reload_ok = true;
	m->config_path = strdup(config_path);
	if (!m->config_path || containers_init(&m->containers, WBG_CONTAINERS_MAX) < 0 ||
	    runtime_index_new(&m->runtime_index) < 0) {
		manager_free(m);
		return log_oom();
	}
	r = config_load(&m->cfg, config_path);
	if (r < 0) {
		manager_free(m);
		return log_error_errno(r, "Not starting with a bad configuration (%s)", config_path);
	}
	m->reload_success_realtime = timer_realtime_usec();
	if (cgroup_root_override)
		snprintf(m->cfg.cgroup_root, sizeof(m->cfg.cgroup_root), "%s", cgroup_root_override);
	if (no_bpf)
		m->cfg.bpf = false;
	if (asprintf(&m->debugfs, "%s/sys/kernel/debug", m->cfg.host_root) < 0) {
		m->debugfs = NULL;
		manager_free(m);
		return log_oom();
	}
	log_set_max_level(m->cfg.log_level);
	*ret = m;
	return 0;
}

static void on_config_changed(void *userdata)
{
	struct manager *m = userdata;

	log_info("%s or its drop-ins changed; reloading", m->config_path);
	(void)manager_reload(m);
}

static int start_signals(struct manager *m)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	sigset_t ss;
	int r;

	sigemptyset(&ss);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaddset(&ss, sigs[i]);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
		r = sd_event_add_signal(m->event, NULL, sigs[i], on_signal, m);
		if (r < 0)
			return log_error_errno(r, "Cannot handle signals");
	}
	r = sd_event_set_watchdog(m->event, true);
	if (r < 0)
		log_warning_errno(r, "Cannot feed the service watchdog");
	return 0;
}

/* BPF, the verdicts it feeds and the handover lifecycle that depends on
 * both. */
static int start_lifecycle(struct manager *m)
{
	_cleanup_free_ char *tracing = NULL;
	struct wbg_lifecycle_params p;
	struct wbg_lifecycle_world world;
	struct wbg_evidence e = { 0 };
	int r;

	if (asprintf(&tracing, "%s/sys/kernel/tracing", m->cfg.host_root) < 0)
		return log_oom();
	if (m->cfg.host_root[0])
		wbg_bpf_set_tracefs(tracing);
	if (m->cfg.bpf) {
		struct wbg_bpf_limits lim = {
			.max_inodes_per_cgroup = m->cfg.max_inodes,
			.max_inodes_per_tenant = m->cfg.max_inodes_per_tenant ? m->cfg.max_inodes_per_tenant : UINT_MAX,
			.dirtied_cgroups = m->cfg.bpf_dirtied_cgroups,
			.inode_records = m->cfg.bpf_inode_records,
		};

		r = wbg_bpf_open(WBG_BPF_ALL, &lim, &m->bpf);
		if (r < 0)
			log_warning_errno(r, "BPF unavailable; flushing every filesystem instead of what each cgroup dirtied");
	}
	m->lifecycle_host = (struct wbg_lifecycle_host){
		.cfg = &m->cfg,
		.mounts = &m->host.mounts,
		.bdevs = &m->host.bdevs,
		.bpf = m->bpf,
		.scratch = &m->scratch,
		.debugfs = m->debugfs,
	};
	p = lifecycle_host_params(&m->cfg, m->bpf);
	world = manager_lifecycle_world(m);
	lifecycle_init(&m->lifecycle, &p, &m->reg, &m->containers, &world);
	r = timer_new_off(m->event, &m->lifecycle_source, 10 * 1000, on_lifecycle_due, m);
	if (r >= 0)
		r = timer_new_off(m->event, &m->expiry_source, 10 * 1000, on_expiry_due, m);
	if (r >= 0)
		r = sd_event_add_time_relative(m->event, &m->verdict_source, CLOCK_MONOTONIC, VERDICT_REFRESH_USEC,
					       1000 * 1000, on_verdict_timer, m);
	if (r < 0)
		return log_error_errno(r, "Cannot add the handover and verdict timers");
	m->mitigating = m->cfg.mitigation != WBG_MITIGATION_OFF;
	evidence_read_static("/proc/kallsyms", tracing, btf_struct_has_member("trace_event_raw_flush_foreign", "dev"), &e);
	verdicts_init(&m->verdicts, &e);
	manager_refresh_verdict(m);
	return 0;
}

/* Once the BPF ring is read: whether removals can be watched (the evidence
 * comes on the ring), and the mode in effect said. */
static void start_flush_mode(struct manager *m)
{
	struct wbg_lifecycle_params p = lifecycle_host_params(&m->cfg, m->bpf);

	lifecycle_set_params(&m->lifecycle, &p);
	if (m->cfg.flush_mode == WBG_FLUSH_EAGER)
		log_info("Flush mode: eager (every removal with dirty data is flushed)");
	else if (p.at_exit)
		log_info("Flush mode: exit (an emptied cgroup's own inodes written, its removal watched)");
	else if (p.on_evidence)
		log_info("Flush mode: on-evidence (removals watched; flushed when a live cgroup dirties their inodes)");
	else
		log_warning("Flush mode: eager; on-evidence needs the BPF programs that see foreign dirtying and "
			    "what each cgroup dirtied, and this kernel or configuration has not got them");
}

/* The scratch cgroup goes below the first watched subtree that exists:
 * writable without CAP_DAC_OVERRIDE, unlike the root. */
static void start_scratch(struct manager *m)
{
	const char *parent = NULL;
	char path[PATH_MAX];
	int r;

	if (!m->cfg.scratch_cycle)
		return;
	for (unsigned i = 0; i < m->cfg.n_roots && !parent; i++) {
		snprintf(path, sizeof(path), "%s/%s", m->cfg.cgroup_root, m->cfg.roots[i]);
		if (*m->cfg.roots[i] && access(path, F_OK) == 0)
			parent = m->cfg.roots[i];
	}
	r = scratch_open(m->cfg.cgroup_root, m->cfg.scratch_cgroup, parent, &m->scratch);
	if (r < 0)
		log_warning_errno(r, "No scratch cgroup: the kernel's offline-wb cleanup will not be re-run");
}

/* The cgroupfs watch, then what a previous run left: a cgroup removed from
 * here on is the watch's news, one removed before is dying by now. */
static int start_watch(struct manager *m)
{
	_cleanup_free_ uint64_t *covered = NULL;
	size_t n_covered = 0;
	int r;

	r = watch_init(&m->watch, m->cfg.cgroup_root, m->cfg.roots, m->cfg.n_roots, &m->reg, &manager_watch_ops, m);
	if (r < 0)
		return r;
	m->watch.max_depth = m->cfg.max_depth;
	watch_set_caps(&m->watch, m->cfg.max_cgroups, m->cfg.max_cgroups_per_tenant);
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
	r = recover_pending(&m->lifecycle, m->cfg.state_dir, &covered, &n_covered);
	if (r != -ENOMEM)
		r = recover_dying(&m->lifecycle, m->debugfs, host_named_bdis(&m->host), m->cfg.cgroup_root,
				  m->cfg.max_depth, covered, n_covered);
	if (r == -ENOMEM)
		return r;
	arm_watch_retry(m);
	return 0;
}

static bool is_ready(void *userdata)
{
	const struct manager *m = userdata;

	return m->ready;
}

static void write_metrics(FILE *f, void *userdata)
{
	metrics_write(userdata, f);
}

/* Before anything that touches the node (the sysctl, the state files, the
 * control socket): a second wbguardd exits here, having touched none. */
static int take_node_lock(struct manager *m)
{
	struct wbg_agent self, holder = { 0 };
	int r;

	agent_self("/proc", &self);
	r = node_lock_take(m->cfg.state_dir, &self, &m->node_lock_fd, &holder);
	if (r == -EBUSY) {
		(void)node_lock_note_refused(m->cfg.state_dir, &self, &holder);
		(void)sd_notifyf(false, "STATUS=Refused: another wbguardd runs on this node (%s, pid %d)",
				 holder.name[0] ? holder.name : "unknown", (int)holder.pid);
		log_error("Another wbguardd runs on this node: %s, pid %d (%s/" WBG_NODE_LOCK_FILE
			  "); not starting: it holds the node's " WBG_SYSCTL_NAME
			  " and the control socket. Run one: the systemd unit or the DaemonSet",
			  holder.name[0] ? holder.name : "unknown", (int)holder.pid, m->cfg.state_dir);
		return -EBUSY;
	}
	if (r < 0)
		log_warning_errno(r, "Cannot take %s/" WBG_NODE_LOCK_FILE ": a second wbguardd on this node would go "
				  "unnoticed", m->cfg.state_dir);
	return 0;
}

int manager_start(struct manager *m)
{
	int r;

	r = take_node_lock(m);
	if (r < 0)
		return r;
	r = sd_event_default(&m->event);
	if (r < 0)
		return log_error_errno(r, "Cannot allocate the event loop");
	r = start_signals(m);
	if (r >= 0)
		r = start_lifecycle(m);
	if (r >= 0)
		r = host_start(&m->host, m->event, m->cfg.host_root);
	if (r < 0)
		return r;
	r = flush_pool_new(m->cfg.workers, "/sys/dev/block", &m->pool);
	if (r < 0)
		return log_error_errno(r, "Cannot start flush workers");
	flush_pool_set_interval(m->pool, m->cfg.fs_interval_usec);
	flush_pool_set_exit_rate(m->pool, m->cfg.exit_bytes_per_sec);
	m->lifecycle_host.pool = m->pool;
	/* cgroupfs has file handles: whether we may open by handle at all
	 * (the shipped DaemonSet's capabilities and seccomp decide) */
	r = flush_probe_handles(m->cfg.cgroup_root);
	if (r == -EPERM)
		log_notice("Opening files by handle is refused here (no CAP_DAC_READ_SEARCH, or seccomp): flushes of a "
			   "cgroup's own inodes fall back to syncfs, held by [flush] fs_interval_sec");
	else if (r < 0)
		log_debug_errno(r, "Cannot probe opening by handle on %s", m->cfg.cgroup_root);
	flush_pool_set_handles(m->pool, r != -EPERM);
	r = sd_event_add_io(m->event, &m->pool_source, flush_pool_fd(m->pool), EPOLLIN, on_pool, m);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the flush pool");
	r = series_start(&m->series, m->event, m->cfg.departed_retention_usec,
			 m->cfg.metrics_listen[0] || m->cfg.metrics_textfile[0], m->bpf, &m->reg, &m->containers);
	if (r < 0)
		return r;
	start_scratch(m);
	if (mkdir(m->cfg.state_dir, 0755) < 0 && errno != EEXIST)
		log_warning_errno(errno, "Cannot create %s", m->cfg.state_dir);
	/* above every id a previous run reserved or left pending */
	lifecycle_open_ids(&m->lifecycle, m->cfg.state_dir, pending_max_id(m->cfg.state_dir));
	{
		struct wbg_expiry_params ep = manager_expiry_params(m);

		expiry_start(&m->expiry, &ep, m->cfg.proc_sys, m->cfg.state_dir, &manager_expiry_ops, m);
	}
	(void)records_open(&m->records, m->cfg.state_dir, m->cfg.records_max_bytes);
	r = start_watch(m);
	if (r < 0)
		return r;
	r = textfile_new(&m->textfile);
	if (r < 0)
		return log_error_errno(r, "Cannot start the metrics textfile writer");
	/* labels for others to schedule by: without them wbguardd works on */
	if (m->cfg.metrics_nfd_features[0] &&
	    (r = textfile_new_named("node-feature-discovery feature file", nfd_features_write, &m->nfd_writer)) < 0)
		log_warning_errno(r, "Cannot start the node-feature-discovery feature file's writer; no labels");
	/* what the listeners' threads answer /livez and /readyz from */
	if (m->cfg.metrics_listen[0] || m->cfg.metrics_probe_listen[0]) {
		r = heartbeat_start(&m->beat, m->event, is_ready, m);
		if (r < 0)
			return r;
	}
	if (m->cfg.metrics_web_config[0]) {
		struct wbg_web_config web;
		char err[256];

		r = web_config_load(&web, m->cfg.metrics_web_config, err, sizeof(err));
		if (r >= 0)
			r = metrics_http_start(&m->http, m->event, m->cfg.metrics_listen, m->cfg.metrics_allow_users,
					       &web, write_metrics, &m->beat, m);
		else
			log_error_errno(r, "[metrics] web_config_file %s", err);
		web_config_done(&web);
	} else
		r = metrics_http_start(&m->http, m->event, m->cfg.metrics_listen, m->cfg.metrics_allow_users, NULL,
				       write_metrics, &m->beat, m);
	if (r < 0)
		return r;
	r = probe_http_start(&m->probes, m->cfg.metrics_probe_listen, &m->beat);
	if (r < 0)
		return r;
	if (m->bpf && wbg_bpf_ring_open(m->bpf, manager_on_ring_event, m) >= 0) {
		r = sd_event_add_io(m->event, &m->ring_source, wbg_bpf_ring_fd(m->bpf), EPOLLIN, on_ring_io, m);
		if (r < 0)
			log_warning_errno(r, "Cannot watch the BPF event ring: inotify alone sees removals");
		else
			manager_stall_events_update(m);
	}
	start_flush_mode(m);
	(void)watch_systemd_start(&m->systemd, m->event, &manager_systemd_ops, m);
	r = control_start(&m->control, m->event, m->cfg.state_dir, manager_bus_add_objects, manager_bus_closed, m);
	if (r >= 0 && m->cfg.watch_config)
		r = config_watch_start(&m->config_watch, m->event, m->config_path, on_config_changed, m);
	if (r >= 0)
		r = manager_nri_start(m);
	if (r < 0)
		return r;
	log_info("Watching %zu cgroups under %s; BPF %s; mitigation %s", m->reg.n, m->cfg.cgroup_root,
		 m->bpf ? "on" : "off", m->mitigating ? "on" : "off");
	m->ready = true;
	heartbeat_publish(&m->beat); /* ready now, not at the next beat */
	(void)sd_notify(false, "READY=1");
	manager_notify_status(m);
	manager_nfd_update(m, m->mitigating);
	return 0;
}

int manager_run(struct manager *m)
{
	return sd_event_loop(m->event);
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	(void)sd_notify(false, "STOPPING=1");
	/* Every handover recorded as it stands (flushing or watched ones as
	 * interrupted: the next start redoes them), its callers answered. */
	lifecycle_stop(&m->lifecycle);
	/* Then at once, after every handover is retired (a retired one may
	 * not boost any more) and before anything that talks to a peer (a
	 * bus flush can block on one): the admin's value back and the state
	 * file gone. */
	if (m->event)
		expiry_stop(&m->expiry);
	config_watch_stop(&m->config_watch);
	manager_nri_stop(m);
	control_stop(&m->control);
	watch_systemd_stop(&m->systemd);
	probe_http_stop(&m->probes);
	metrics_http_stop(&m->http);
	heartbeat_stop(&m->beat);
	m->watch_retry_source = sd_event_source_disable_unref(m->watch_retry_source);
	m->name_retry_source = sd_event_source_disable_unref(m->name_retry_source);
	m->verdict_source = sd_event_source_disable_unref(m->verdict_source);
	m->lifecycle_source = sd_event_source_disable_unref(m->lifecycle_source);
	m->expiry_source = sd_event_source_disable_unref(m->expiry_source);
	m->ring_source = sd_event_source_disable_unref(m->ring_source);
	m->inotify_source = sd_event_source_disable_unref(m->inotify_source);
	m->pool_source = sd_event_source_disable_unref(m->pool_source);
	host_stop(&m->host);
	/* not guarding any more (the kernel's verdict stays true): handed over
	 * first, so that both files are written at once */
	manager_nfd_update(m, false);
	if (m->event)
		metrics_textfile_update(m, true);
	textfile_free(m->textfile, 2ULL * 1000 * 1000); /* a stalled disk does not hold the exit */
	textfile_free(m->nfd_writer, 2ULL * 1000 * 1000);
	flush_pool_free(m->pool);
	watch_done(&m->watch);
	registry_free(&m->reg);
	series_stop(&m->series);
	containers_free(&m->containers);
	runtime_index_free(m->runtime_index);
	scratch_close(&m->scratch);
	wbg_bpf_free(m->bpf);
	records_close(&m->records);
	/* last: a successor starts only once the sysctl is back and the
	 * socket gone */
	closep(&m->node_lock_fd);
	sd_event_unref(m->event);
	config_done(&m->cfg);
	free(m->config_path);
	free(m->debugfs);
	free(m);
	return NULL;
}
