/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <microhttpd.h>

#include "bpf-programs.h"
#include "expiry.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "manager-dying.h"
#include "metrics-http.h"
#include "textfile.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	metric_value(f, name, "gauge", help, v);
}

/* A client that holds connections open cannot take them all: per address
 * at most a few, so the scraper and the probes always get in. */
#define WBG_HTTP_CONNS_MAX 64
#define WBG_HTTP_CONNS_PER_IP 4

/* One row per flush target, with its device and kind as labels. */
static int target_rows(dev_t dev, enum flush_kind kind, const struct flush_target_stats *st, void *userdata)
{
	struct metric_rows **rows = userdata;
	char labels[64];

	snprintf(labels, sizeof(labels), "device=\"%u:%u\",kind=\"%s\"", major(dev), minor(dev),
		 kind == FLUSH_BDEV ? "bdev" : "fs");
	if (metric_rows_add(rows[0], labels, (double)st->jobs) < 0 ||
	    metric_rows_add(rows[1], labels, (double)st->syncfs_calls) < 0 ||
	    metric_rows_add(rows[2], labels, (double)st->device_bytes) < 0 ||
	    metric_rows_add(rows[3], labels, (double)st->budget_waits) < 0)
		return -ENOMEM;
	return 0;
}

void metrics_write(const struct manager *m, FILE *f)
{
	static const char *const groups[] = { "cgroup_writeback_by_id", "dirtied", "rmdir", "paths" };

	metric_family(f, "wbguard_handovers_total", "counter",
		      "Handovers of cgroups going away, by what started them and how they ended.");
	for (unsigned t = 0; t < _WBG_TRIGGER_MAX; t++)
		for (unsigned o = 0; o < _WBG_OUTCOME_MAX; o++)
			if (m->handovers[t][o] || o == WBG_OUTCOME_FLUSHED)
				fprintf(f, "wbguard_handovers_total{trigger=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
					wbg_trigger_to_string(t), wbg_outcome_to_string(o), m->handovers[t][o]);
	metric_family(f, "wbguard_handover_reaction_seconds", "histogram",
		      "From the first sign of a cgroup going away to the first flush issued for it.");
	metric_hist(f, "wbguard_handover_reaction_seconds", &m->reaction);
	metric_family(f, "wbguard_flush_duration_seconds", "histogram",
		      "From the first flush issued for a handover to all of its targets done.");
	metric_hist(f, "wbguard_flush_duration_seconds", &m->flush_duration);
	metric_counter(f, "wbguard_flushed_device_bytes_total",
		"Bytes written to block devices while handover flushes ran.", m->flushed_device_bytes);
	metric_counter(f, "wbguard_cleanup_cycles_total",
		"Scratch memcg cycles that re-ran the kernel's offline-wb cleanup.", m->cleanup_cycles);
	metric_counter(f, "wbguard_cleanup_failures_total", "Scratch memcg cycles that failed.", m->cleanup_failures);
	metric_counter(f, "wbguard_dying_wb_dirty_after_handover_total",
		"Handovers after which wb_stats still showed a dirty dying wb of the cgroup.", m->verify_dirty);
	metric_counter(f, "wbguard_inotify_overflows_total", "inotify queue overflows (each answered by a rescan).",
		m->watch.overflows);
	metric_counter(f, "wbguard_inotify_watch_failures_total", "Watches the inotify limit refused (retried later).",
		m->watch.watch_failures);
	metric_counter(f, "wbguard_textfile_writes_total", "Metrics textfile writes done (off the event loop).",
		textfile_written(m->textfile));
	metric_counter(f, "wbguard_textfile_errors_total", "Metrics textfile writes that failed.",
		textfile_errors(m->textfile));
	metric_counter(f, "wbguard_textfile_replaced_total",
		"Metrics texts replaced by a newer one before the disk took them.", textfile_replaced(m->textfile));
	if (wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED) {
		uint64_t evicted = 0;

		if (wbg_bpf_devsets_evicted(m->bpf, &evicted) >= 0)
			metric_counter(f, "wbguard_bpf_devsets_evicted_total",
				       "Per-cgroup dirtied-device sets the BPF LRU evicted ([bpf] dirtied_cgroups).", evicted);
	}
	metric_counter(f, "wbguard_handover_plans_evicted_total",
		"Handovers planned from the mount table because their cgroup's BPF set may have been evicted.",
		m->plans_set_evicted);
	metric_counter(f, "wbguard_records_rotations_total",
		"Times handovers.jsonl reached records_max_size and was rotated.", m->records.rotations);
	metric_counter(f, "wbguard_records_errors_total", "Handover records that could not be written to handovers.jsonl.",
		m->records.errors);
	metric_counter(f, "wbguard_cgroup_paths_too_long_total",
		"Cgroups not tracked because their path is longer than PATH_MAX.", m->watch.paths_too_long);
	metric_counter(f, "wbguard_cgroups_too_deep_total",
		"Cgroups not tracked because they are deeper than [daemon] max_depth.", m->watch.paths_too_deep);
	metric_counter(f, "wbguard_rescans_total", "Walks of the cgroup tree after start-up.",
		m->watch.rescans > 0 ? m->watch.rescans - 1 : 0);
	metric_counter(f, "wbguard_rescan_removals_total", "Removals found by a rescan rather than by an event.",
		m->watch.rescan_removals);
	metric_counter(f, "wbguard_systemd_stop_jobs_total", "systemd stop jobs seen on the bus.", m->systemd_stop_jobs);
	metric_counter(f, "wbguard_bus_disconnects_total", "Times the system bus went away.", m->bus_disconnects);
	gauge(f, "wbguard_tracked_cgroups", "Cgroups wbguardd tracks now.", (double)m->reg.n);
	gauge(f, "wbguard_flush_waiters", "API callers waiting for a flush to end now.", (double)m->n_waiters);
	{
		struct flush_pool_stats ps;

		flush_pool_stats(m->pool, &ps);
		gauge(f, "wbguard_flush_workers_busy", "Flush worker threads inside a flush now.", (double)ps.busy);
		gauge(f, "wbguard_flush_workers_stuck",
		      "Flush workers still inside a flush past its timeout (replaced by new threads).", (double)ps.stuck);
		metric_counter(f, "wbguard_flush_stuck_total", "Flushes given up on as stuck past their timeout.",
			       ps.stuck_total);
		metric_counter(f, "wbguard_flush_refused_busy_total",
			       "Flush requests refused: the target's waiting job had too many waiters.", ps.refused_busy);
		metric_counter(f, "wbguard_flush_inodes_capped_total",
			       "Merged jobs whose inode list hit its bound and became a syncfs.", ps.inodes_capped);
		metric_counter(f, "wbguard_flush_jobs_total", "Flush jobs started (one per filesystem or block device).",
			       ps.jobs_started);
		metric_counter(f, "wbguard_flush_budget_waits_total",
			       "Flush jobs held back by the budget ([flush] fs_interval_sec).", ps.budget_waits);
		metric_value(f, "wbguard_flush_budget_wait_seconds_total", "counter",
			     "Time flush jobs spent held back by the budget.", (double)ps.budget_wait_usec / 1e6);
	}
	{
		struct metric_rows jobs = { 0 }, calls = { 0 }, bytes = { 0 }, waits = { 0 };

		(void)flush_pool_foreach_target(m->pool, target_rows, (struct metric_rows *[]){ &jobs, &calls, &bytes, &waits });
		metric_family(f, "wbguard_flush_target_jobs_total", "counter",
			      "Flush jobs started per filesystem or block device (the budget's unit).");
		metric_rows_write(f, "wbguard_flush_target_jobs_total", &jobs);
		metric_family(f, "wbguard_flush_target_syncfs_total", "counter", "syncfs(2) calls per filesystem.");
		metric_rows_write(f, "wbguard_flush_target_syncfs_total", &calls);
		metric_family(f, "wbguard_flush_target_device_bytes_total", "counter",
			      "Bytes written to the device while wbguardd's flushes of it ran.");
		metric_rows_write(f, "wbguard_flush_target_device_bytes_total", &bytes);
		metric_family(f, "wbguard_flush_target_budget_waits_total", "counter",
			      "Flush jobs the budget held back, per filesystem or block device.");
		metric_rows_write(f, "wbguard_flush_target_budget_waits_total", &waits);
	}
	manager_dying_metrics(f, m);
	gauge(f, "wbguard_mitigation_active", "1 when wbguardd flushes for removed cgroups.", m->mitigating);
	gauge(f, "wbguard_system_bus_connected", "1 while wbguardd is subscribed to systemd.", m->bus ? 1 : 0);

	metric_family(f, "wbguard_bpf_programs_loaded", "gauge",
		      "1 when the BPF program group runs on this kernel; 0 means its counters are missing.");
	for (unsigned g = 0; g < ELEMENTSOF(groups); g++)
		fprintf(f, "wbguard_bpf_programs_loaded{group=\"%s\"} %d\n", groups[g],
			(wbg_bpf_groups(m->bpf) & (1U << g)) ? 1 : 0);

	metric_family(f, "wbguard_kernel_dying_wb_fallback", "gauge",
		      "Whether the kernel's foreign flushes reach dying wbs (seed 000): 1 on the state that holds.");
	for (unsigned v = 0; v < _WBG_VERDICT_MAX; v++)
		fprintf(f, "wbguard_kernel_dying_wb_fallback{state=\"%s\"} %d\n", wbg_verdict_to_string(v), m->dying_wb == v);
	metric_family(f, "wbguard_kernel_dying_wb_fallback_evidence", "gauge",
		      "What the dying-wb verdict rests on: the symbol (0/1), foreign flushes to dying wbs that "
		      "succeeded and that got -ENOENT since wbguardd started.");
	fprintf(f, "wbguard_kernel_dying_wb_fallback_evidence{kind=\"symbol\"} %d\n", m->evidence.sym_lookup_dying);
	fprintf(f, "wbguard_kernel_dying_wb_fallback_evidence{kind=\"ok_to_dying\"} %" PRIu64 "\n", m->evidence.ok_to_dying);
	fprintf(f, "wbguard_kernel_dying_wb_fallback_evidence{kind=\"enoent_to_dying\"} %" PRIu64 "\n",
		m->evidence.enoent_to_dying);
	fprintf(f, "wbguard_kernel_dying_wb_fallback_evidence{kind=\"dying_wb_found\"} %" PRIu64 "\n",
		m->evidence.lookup_dying_found);
	metric_family(f, "wbguard_kernel_bdev_foreign_flush", "gauge",
		      "Whether the kernel flushes foreign block-device mappings separately (seed 001).");
	for (unsigned v = 0; v < _WBG_VERDICT_MAX; v++)
		fprintf(f, "wbguard_kernel_bdev_foreign_flush{state=\"%s\"} %d\n", wbg_verdict_to_string(v), m->bdev_flush == v);
	metric_family(f, "wbguard_kernel_bdev_foreign_flush_evidence", "gauge",
		      "What the bdev verdict rests on: its symbol, and a dev field in writeback:flush_foreign.");
	fprintf(f, "wbguard_kernel_bdev_foreign_flush_evidence{kind=\"symbol\"} %d\n", m->evidence.sym_bdev_flush);
	fprintf(f, "wbguard_kernel_bdev_foreign_flush_evidence{kind=\"tracepoint_dev_field\"} %d\n",
		m->evidence.tp_dev_field);
	fprintf(f, "wbguard_kernel_bdev_foreign_flush_evidence{kind=\"bdev_flushes_seen\"} %" PRIu64 "\n",
		m->evidence.bdev_flushes);
	fprintf(f, "wbguard_kernel_bdev_foreign_flush_evidence{kind=\"bdev_dirty_own_path\"} %" PRIu64 "\n",
		m->evidence.bdev_dirty_own_path);
	fprintf(f, "wbguard_kernel_bdev_foreign_flush_evidence{kind=\"bdev_dirty_owner_wb_path\"} %" PRIu64 "\n",
		m->evidence.bdev_dirty_shared_path);

	expiry_metrics(f, m);
	metrics_write_kernel(f, m);
	metric_counter(f, "wbguard_scrapes_total", "Scrapes of this endpoint.", m->scrapes);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **ptr)
{
	struct manager *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return MHD_NO;
	f = open_memstream(&buf, &n);
	if (!f)
		return MHD_NO;
	if (strcmp(url, "/metrics") == 0) {
		m->scrapes++;
		metrics_write(m, f);
	} else if (strcmp(url, "/livez") == 0)
		fputs("ok\n", f); /* the event loop answered: alive */
	else if (strcmp(url, "/readyz") == 0) {
		/* as sd_notify READY: the watches, BPF and the verdicts are up */
		if (!m->ready)
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
		fputs(m->ready ? "ok\n" : "starting\n", f);
	} else if (strcmp(url, "/") == 0)
		fputs("wbguardd: see /metrics, /livez, /readyz\n", f);
	else {
		status = MHD_HTTP_NOT_FOUND;
		fputs("not found\n", f);
	}
	fclose(f);
	resp = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void rearm(struct manager *m);

static int on_mhd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	(void)MHD_run(m->mhd);
	rearm(m);
	return 0;
}

static int on_mhd_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	return on_mhd(s, -1, 0, userdata);
}

/* A timer only while a connection has one pending: idle means no wakeups. */
static void rearm(struct manager *m)
{
	MHD_UNSIGNED_LONG_LONG ms;

	m->mhd_timer_source = sd_event_source_disable_unref(m->mhd_timer_source);
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES &&
	    sd_event_add_time_relative(m->event, &m->mhd_timer_source, CLOCK_MONOTONIC, ms * 1000, 0, on_mhd_timer,
				       m) < 0)
		log_warning("Cannot arm the metrics server's timer: idle connections close at the next request");
}

int metrics_http_start(struct manager *m)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	int r;

	if (!m->cfg.metrics_listen[0])
		return 0;
	r = parse_listen(m->cfg.metrics_listen, &ss);
	if (r < 0)
		return log_error_errno(r, "Bad metrics listen address '%s'", m->cfg.metrics_listen);
	m->mhd = MHD_start_daemon(MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)WBG_HTTP_CONNS_MAX,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)WBG_HTTP_CONNS_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				  MHD_OPTION_END);
	if (!m->mhd)
		return log_error_errno(EADDRINUSE, "Cannot serve metrics on %s", m->cfg.metrics_listen);
	info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info)
		return log_error_errno(EIO, "libmicrohttpd gave no epoll fd");
	r = sd_event_add_io(m->event, &m->mhd_io_source, info->epoll_fd, EPOLLIN, on_mhd, m);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the metrics listener");
	log_info("Serving metrics on http://%s/metrics", m->cfg.metrics_listen);
	return 0;
}

void metrics_http_stop(struct manager *m)
{
	m->mhd_timer_source = sd_event_source_disable_unref(m->mhd_timer_source);
	m->mhd_io_source = sd_event_source_disable_unref(m->mhd_io_source);
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
}

void metrics_textfile_update(struct manager *m, bool force)
{
	uint64_t now = 0;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (!m->cfg.metrics_textfile[0] || !m->textfile)
		return;
	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &now);
	if (!force && now - m->textfile_written_usec < 5ULL * 1000 * 1000)
		return;
	m->textfile_written_usec = now;
	/* made here, written (and fsynced) by the textfile thread */
	f = open_memstream(&buf, &n);
	if (!f) {
		log_oom();
		return;
	}
	metrics_write(m, f);
	if (fclose(f) != 0) {
		free(buf);
		log_oom();
		return;
	}
	textfile_submit(m->textfile, m->cfg.metrics_textfile, buf);
}
