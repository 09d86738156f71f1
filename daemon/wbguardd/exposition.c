/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The whole exposition: each part's families (they read their own state
 * and change nothing), for /metrics and the Metrics method; the textfile
 * has all but the endpoint's own (write_endpoint). */
#include <time.h>
#include <stdlib.h>

#include "wbg-kernel.h"
#include "wbg-flush.h"
#include "wbg-base.h"
#include "manager.h"
#include "wbg-metrics.h"
#include "metrics-kernel.h"

static void write_bpf(FILE *f, const struct manager *m)
{
	static const char *const groups[] = { "cgroup_writeback_by_id", "dirtied", "rmdir", "paths" };
	uint64_t evicted = 0;

	metric_family(f, "wbguard_bpf_programs_loaded", "gauge",
		      "1 when the BPF program group runs on this kernel; 0 means its counters are missing.");
	for (unsigned g = 0; g < ELEMENTSOF(groups); g++)
		fprintf(f, "wbguard_bpf_programs_loaded{group=\"%s\"} %d\n", groups[g],
			(wbg_bpf_groups(m->bpf) & (1U << g)) ? 1 : 0);
	if ((wbg_bpf_groups(m->bpf) & WBG_BPF_DIRTIED) && wbg_bpf_devsets_evicted(m->bpf, &evicted) >= 0)
		metric_counter(f, "wbguard_bpf_devsets_evicted_total",
			       "Per-cgroup dirtied-device sets the BPF LRU evicted ([bpf] dirtied_cgroups).", evicted);
}

static void write_textfile(FILE *f, const struct manager *m)
{
	metric_counter(f, "wbguard_textfile_writes_total", "Metrics textfile writes done (off the event loop).",
		       textfile_written(m->textfile));
	metric_counter(f, "wbguard_textfile_errors_total", "Metrics textfile writes that failed.",
		       textfile_errors(m->textfile));
	metric_counter(f, "wbguard_textfile_replaced_total",
		       "Metrics texts replaced by a newer one before the disk took them.", textfile_replaced(m->textfile));
	metric_counter(f, "wbguard_wbstats_read_failures_total",
		       "Reads of debugfs wb_stats that failed on a bdi (too large, unreadable): answered unknown, not drained.",
		       wbstats_read_failures);
}

/* [metrics] nfd_features_file's writes, when it is set. */
static void write_nfd(FILE *f, const struct manager *m)
{
	if (!m->nfd_writer)
		return;
	metric_counter(f, "wbguard_nfd_features_writes_total",
		       "node-feature-discovery feature file writes done (off the event loop): a label changed, or "
		       "the file's expiry was renewed.",
		       textfile_written(m->nfd_writer));
	metric_counter(f, "wbguard_nfd_features_errors_total",
		       "node-feature-discovery feature file writes that failed (logged, naming the file; tried "
		       "again at the next renewal).",
		       textfile_errors(m->nfd_writer));
}

/* NRI's connection, when [nri] enable: whether it is synchronized, how
 * often it connected, each kind of request, each kind of failure. */
static void write_nri(FILE *f, const struct manager *m)
{
	struct wbg_nri_stats st;

	if (!m->nri)
		return;
	nri_stats(m->nri, &st);
	metric_value(f, "wbguard_nri_connected", "gauge",
		     "1 while wbguardd is synchronized with the runtime's NRI (configured, told every pod and container).",
		     manager_nri_synced(m));
	metric_counter(f, "wbguard_nri_connections_total", "Connections made to the runtime's NRI socket.",
		       st.connections);
	metric_family(f, "wbguard_nri_events_total", "counter",
		      "NRI requests answered, by kind (unimplemented: methods wbguardd does not serve, answered so).");
	for (unsigned k = 0; k < _WBG_NRI_EVENT_KIND_MAX; k++)
		fprintf(f, "wbguard_nri_events_total{event=\"%s\"} %" PRIu64 "\n", nri_event_kind_to_string(k),
			st.events[k]);
	metric_family(f, "wbguard_nri_errors_total", "counter",
		      "NRI failures by kind: connect, refused, protocol, timeout, hangup, write (each closes the "
		      "connection and reconnects), table_full (a pod or container over its bound), too_big (a "
		      "message that unpacks past its heap budget; closes the connection).");
	for (unsigned e = 0; e < _WBG_NRI_ERROR_MAX; e++)
		fprintf(f, "wbguard_nri_errors_total{error=\"%s\"} %" PRIu64 "\n", nri_error_to_string(e), st.errors[e]);
}

static bool watched(const void *lc, uint64_t cgroup_id)
{
	return lifecycle_watching(lc, cgroup_id);
}

/* What wbguardd knows of the node and of its own work: /metrics and the
 * textfile alike. */
static void write_node(FILE *f, const struct manager *m)
{
	uint64_t too_long = 0;
	const struct wbg_kernel_view kernel = { .bpf = m->bpf, .series = &m->series, .containers = &m->containers,
						.per_cgroup = m->cfg.metrics_per_cgroup, .too_long = &too_long,
						.debugfs = m->debugfs, .named = host_named_bdis(&m->host),
						.watched = watched, .watched_userdata = &m->lifecycle };

	lifecycle_metrics(f, &m->lifecycle);
	watch_metrics(f, &m->watch);
	flush_pool_metrics(f, m->pool);
	records_metrics(f, &m->records);
	write_textfile(f, m);
	write_nfd(f, m);
	watch_systemd_metrics(f, &m->systemd);
	host_metrics(f, &m->host);
	metric_value(f, "wbguard_mitigation_active", "gauge", "1 when wbguardd flushes for removed cgroups.",
		     m->mitigating);
	metric_value(f, "wbguard_config_last_reload_successful", "gauge",
		     "1 when the last load of the configuration succeeded; 0: a reload was refused and the previous "
		     "configuration runs.",
		     m->reload_ok);
	metric_value(f, "wbguard_config_last_reload_success_timestamp_seconds", "gauge",
		     "When the configuration was last loaded (Unix time).", (double)m->reload_success_realtime / 1e6);
	metric_counter(f, "wbguard_config_reload_failures_total", "Reloads refused (the file named the error).",
		       m->reload_failures);
	metric_counter(f, "wbguard_container_values_too_long_total",
		       "Container names in annotations longer than Kubernetes allows: not kept.",
		       m->containers.values_too_long);
	metric_value(f, "wbguard_config_unknown_keys", "gauge",
		     "Keys the running configuration has that this wbguardd does not know (logged, ignored).",
		     m->cfg.unknown_keys);
	write_bpf(f, m);
	write_nri(f, m);
	{
		struct runtime_index_stats rs;

		runtime_index_stats(m->runtime_index, &rs);
		metric_counter(f, "wbguard_runtime_state_lookups_total",
			       "Lookups of a cgroup in the OCI runtimes' state (cached: a stat per runtime root).",
			       rs.lookups);
		metric_counter(f, "wbguard_runtime_state_parses_total",
			       "Container states parsed (once per container, again only while not yet written).",
			       rs.parses);
	}
	verdicts_metrics(f, &m->verdicts);
	expiry_metrics(f, &m->expiry);
	metrics_write_kernel(f, &kernel);
	metric_value(f, "wbguard_series_path_too_long", "gauge",
		     "Per-cgroup series left out of this scrape: the cgroup's path is over 512 bytes (its counts are "
		     "in the node-wide totals).",
		     (double)too_long);
	metric_family(f, "wbguard_event_loop_lag_seconds", "histogram",
		      "How late the event loop ran its timers (handover ticks, expiry rounds, the verdict refresh): "
		      "the wait of every hook call, probe and scrape behind them. Includes the timers' 10 ms accuracy.");
	metric_hist(f, "wbguard_event_loop_lag_seconds", &m->loop_lag);
	{
		/* the hook's syncfs while we were not there, under its budget */
		struct hook_budget_counts hb = { 0 };

		(void)hook_budget_counts(m->cfg.state_dir, &hb);
		metric_family(f, "wbguard_hook_fallback_syncfs_total", "counter",
			      "The OCI hook's own syncfs at container exits wbguardd did not answer, by result: taken, "
			      "refused by the per-filesystem budget (one a second) every hook shares, or refused because "
			      "every slot of its table (64 filesystems) was flushed within that second.");
		fprintf(f, "wbguard_hook_fallback_syncfs_total{result=\"taken\"} %" PRIu64 "\n", hb.taken);
		fprintf(f, "wbguard_hook_fallback_syncfs_total{result=\"refused\"} %" PRIu64 "\n", hb.refused);
		fprintf(f, "wbguard_hook_fallback_syncfs_total{result=\"table_full\"} %" PRIu64 "\n", hb.full);
	}
	build_info_metric(f, WBGUARD_VERSION);
}

/* The endpoint's own: its HTTP servers' counters and the standard process_*
 * families. Not in the textfile: node_exporter serves its own process_*
 * (other help texts) and its own handler's counters, and client_golang
 * refuses a family two sources give, on every scrape (tests/node-exporter);
 * and a reader of the file does not use wbguardd's HTTP servers. */
static void write_endpoint(FILE *f, const struct manager *m)
{
	metrics_http_metrics(f, &m->http);
	probe_http_metrics(f, &m->probes);
	process_metrics(f, "/proc");
}

void metrics_write(const struct manager *m, FILE *f)
{
	write_node(f, m);
	write_endpoint(f, m);
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
	write_node(f, m);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		metric_value(f, "wbguard_textfile_last_update_timestamp_seconds", "gauge",
			     "When wbguardd wrote this file (Unix time): at least every minute while it runs; older "
			     "means it is not running.",
			     (double)ts.tv_sec);
	}
	if (fclose(f) != 0) {
		free(buf);
		log_oom();
		return;
	}
	textfile_submit(m->textfile, m->cfg.metrics_textfile, buf);
}
