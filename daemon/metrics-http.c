/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <microhttpd.h>

#include "bpf-counters.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "metrics-http.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	metric_family(f, name, "counter", help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void gauge_or_counter(FILE *f, const char *name, const char *type, const char *help, double v)
{
	metric_family(f, name, type, help);
	fprintf(f, "%s %.9g\n", name, v);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	gauge_or_counter(f, name, "gauge", help, v);
}

/* A cgroup's labels: id as cAdvisor has it (the path from the cgroupfs root
 * with a leading '/'), escaped. NULL for cgroups we cannot name: their
 * counts are in the node-wide totals only. */
static char *cgroup_labels(struct manager *m, uint64_t id)
{
	const char *path = manager_cgroup_path(m, id);
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (!path || !(f = open_memstream(&buf, &n)))
		return NULL;
	fputs("id=\"/", f);
	metric_label_value(f, path);
	fputc('"', f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Per-target-cgroup foreign flush results, merged by (cgroup, result,
 * target state): several error codes fold into "other". */
struct wbid_row {
	uint64_t id, count;
	unsigned result, state;
};

struct wbid_rows {
	struct wbid_row *v;
	size_t n, cap;
};

static unsigned result_class(int ret)
{
	return ret == 0 ? 0 : ret == -ENOENT ? 1 : 2;
}

static int collect_wbid(const struct wbg_wbid_key *k, uint64_t count, void *userdata)
{
	struct wbid_rows *rows = userdata;

	if (rows->n == rows->cap) {
		struct wbid_row *v = realloc(rows->v, (rows->cap = rows->cap ? rows->cap * 2 : 64) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rows->v = v;
	}
	rows->v[rows->n++] = (struct wbid_row){ k->cgroup_id, count, result_class(k->ret), k->target_state % 3 };
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct wbid_row *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->result != y->result)
		return (int)x->result - (int)y->result;
	return (int)x->state - (int)y->state;
}

static const char *const result_names[] = { "ok", "enoent", "other" };

static void write_cgroup_wbid(FILE *f, struct manager *m)
{
	struct wbid_rows rows = { 0 };

	if (wbg_bpf_foreach_wbid(m->bpf, collect_wbid, &rows) < 0 || rows.n == 0) {
		free(rows.v);
		return;
	}
	qsort(rows.v, rows.n, sizeof(*rows.v), cmp_row);
	metric_family(f, "wbguard_cgroup_foreign_flushes_total", "counter",
		      "The kernel's foreign flushes to this cgroup's wbs, by result and by whether it was dying then.");
	for (size_t i = 0; i < rows.n; i++) {
		struct wbid_row r = rows.v[i];

		while (i + 1 < rows.n && cmp_row(&rows.v[i + 1], &r) == 0)
			r.count += rows.v[++i].count;
		_cleanup_free_ char *labels = r.id ? cgroup_labels(m, r.id) : NULL;

		if (labels)
			fprintf(f, "wbguard_cgroup_foreign_flushes_total{%s,result=\"%s\",target=\"%s\"} %" PRIu64 "\n",
				labels, result_names[r.result], wbg_target_state_to_string(r.state), r.count);
	}
	free(rows.v);
}

/* Per-cgroup pauses and switches, one pass over the map per family. */
struct stats_out {
	struct manager *m;
	FILE *f;
	const char *name;
	unsigned field; /* 0 pauses, 1 pause seconds, 2 switches from */
};

static int write_stats_row(uint64_t id, const struct wbg_cgroup_stats *st, void *userdata)
{
	struct stats_out *o = userdata;
	_cleanup_free_ char *labels = NULL;

	const uint64_t count[] = { st->pauses, st->pauses, st->switches_from };

	if (count[o->field] == 0)
		return 0;
	labels = cgroup_labels(o->m, id);
	if (!labels)
		return 0;
	if (o->field == 1)
		fprintf(o->f, "%s{%s} %.3f\n", o->name, labels, st->pause_ms / 1000.0);
	else
		fprintf(o->f, "%s{%s} %" PRIu64 "\n", o->name, labels, count[o->field]);
	return 0;
}

static void write_cgroup_stats(FILE *f, struct manager *m, unsigned field, const char *name, const char *help)
{
	struct stats_out o = { m, f, name, field };

	metric_family(f, name, "counter", help);
	(void)wbg_bpf_foreach_cgroup_stats(m->bpf, write_stats_row, &o);
}

static bool attached(struct manager *m, const char *prog)
{
	return m->bpf && wbg_bpf_attached(m->bpf, prog) > 0;
}

static int write_prog(const char *name, bool ok, const char *why, void *userdata)
{
	FILE *f = userdata;

	fprintf(f, "wbguard_bpf_program_attached{program=\"%s\",reason=\"", name);
	metric_label_value(f, ok ? "" : why);
	fprintf(f, "\"} %d\n", ok);
	return 0;
}

static void labelled(FILE *f, const char *name, const char *label, const char *value, uint64_t v)
{
	fprintf(f, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, value, v);
}

/* The kernel's side, from the BPF counters: exact node-wide totals, then
 * the per-cgroup series. A family is left out when its program is not
 * attached, so a missing counter never reads as zero. */
static void write_kernel(FILE *f, struct manager *m)
{
	uint64_t t[_WBG_TOTAL_MAX];

	metric_family(f, "wbguard_bpf_program_attached", "gauge",
		      "1 when the BPF program runs on this kernel; 0 with the reason its counters are missing.");
	(void)wbg_bpf_foreach_program(m->bpf, write_prog, f);
	if (!m->bpf || wbg_bpf_totals(m->bpf, t) < 0)
		return;
	if (attached(m, "wbid_exit")) {
		metric_family(f, "wbguard_kernel_foreign_flushes_total", "counter",
			      "The kernel's foreign flushes (cgroup_writeback_by_id) by result and by whether the "
			      "target memcg was dying: enoent to a dying target is the stall.");
		for (unsigned r = 0; r < 3; r++)
			for (unsigned st = 0; st < 3; st++)
				fprintf(f, "wbguard_kernel_foreign_flushes_total{result=\"%s\",target=\"%s\"} %" PRIu64 "\n",
					result_names[r], wbg_target_state_to_string(st), t[WBG_T_WBID + r * 3 + st]);
	}
	if (attached(m, "wbid_lookup_dying")) {
		const char *n = "wbguard_kernel_dying_wb_lookups_total";

		metric_family(f, n, "counter",
			      "Seed 000's fallback: wb_get_lookup_dying() calls that found a dying wb, and that did not.");
		labelled(f, n, "result", "found", t[WBG_T_LOOKUP_DYING_FOUND]);
		labelled(f, n, "result", "none", t[WBG_T_LOOKUP_DYING_NONE]);
	}
	if (attached(m, "path_bdev_flush") || attached(m, "path_bdev_wb"))
		counter(f, "wbguard_kernel_bdev_flushes_total",
			"Seed 001's fallback: foreign block-device page caches written back on their own.",
			t[WBG_T_BDEV_FLUSH]);
	if (attached(m, "path_frn_exit")) {
		counter(f, "wbguard_kernel_bdev_flush_work_total", "memcg_bdev_frn_flusher work items run.",
			t[WBG_T_FRN_WORK]);
		gauge_or_counter(f, "wbguard_kernel_bdev_flush_work_seconds_total", "counter",
				 "Time memcg_bdev_frn_flusher work items took.", t[WBG_T_FRN_WORK_NS] / 1e9);
	}
	if (attached(m, "path_flush_foreign")) {
		const char *n = "wbguard_kernel_foreign_flush_requests_total";

		metric_family(f, n, "counter",
			      "writeback:flush_foreign events: flushes of another cgroup's wb (kind wb) or of a "
			      "block device's page cache (kind bdev, seed 001).");
		labelled(f, n, "kind", "wb", t[WBG_T_FLUSH_FOREIGN_WB]);
		labelled(f, n, "kind", "bdev", t[WBG_T_FLUSH_FOREIGN_BDEV]);
	}
	if (attached(m, "path_foreign_dirty")) {
		const char *n = "wbguard_kernel_foreign_dirty_total";

		metric_family(f, n, "counter",
			      "writeback:track_foreign_dirty events: folios dirtied against another cgroup's wb, "
			      "by whether they were a block device's page cache.");
		labelled(f, n, "kind", "wb", t[WBG_T_FOREIGN_DIRTY_WB]);
		labelled(f, n, "kind", "bdev", t[WBG_T_FOREIGN_DIRTY_BDEV]);
	}
	if (attached(m, "path_bdp")) {
		counter(f, "wbguard_kernel_dirty_throttle_pauses_total",
			"Writers put to sleep in balance_dirty_pages(), node-wide.", t[WBG_T_BDP_PAUSES]);
		gauge_or_counter(f, "wbguard_kernel_dirty_throttle_pause_seconds_total", "counter",
				 "Time writers were put to sleep in balance_dirty_pages(), node-wide.",
				 t[WBG_T_BDP_PAUSE_MS] / 1000.0);
		write_cgroup_stats(f, m, 0, "wbguard_cgroup_dirty_throttle_pauses_total",
				   "Sleeps of this cgroup's writers in balance_dirty_pages().");
		write_cgroup_stats(f, m, 1, "wbguard_cgroup_dirty_throttle_pause_seconds_total",
				   "Time this cgroup's writers slept in balance_dirty_pages(): the stall itself.");
	}
	if (attached(m, "path_switch")) {
		counter(f, "wbguard_kernel_inode_wb_switches_total",
			"Inodes switched between cgroup wbs (seed 002); rate() gives switches per second.",
			t[WBG_T_SWITCHES]);
		write_cgroup_stats(f, m, 2, "wbguard_cgroup_inode_wb_switches_total",
				   "Inodes switched away from this cgroup's wbs.");
	}
	if (attached(m, "wbid_exit"))
		write_cgroup_wbid(f, m);
}

void metrics_write(struct manager *m, FILE *f)
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
	counter(f, "wbguard_flushed_device_bytes_total",
		"Bytes written to block devices while handover flushes ran.", m->flushed_device_bytes);
	counter(f, "wbguard_cleanup_cycles_total",
		"Scratch memcg cycles that re-ran the kernel's offline-wb cleanup.", m->cleanup_cycles);
	counter(f, "wbguard_cleanup_failures_total", "Scratch memcg cycles that failed.", m->cleanup_failures);
	counter(f, "wbguard_dying_wb_dirty_after_handover_total",
		"Handovers after which wb_stats still showed a dirty dying wb of the cgroup.", m->verify_dirty);
	counter(f, "wbguard_inotify_overflows_total", "inotify queue overflows (each answered by a rescan).",
		m->watch.overflows);
	counter(f, "wbguard_inotify_watch_failures_total", "Watches the inotify limit refused (retried later).",
		m->watch.watch_failures);
	counter(f, "wbguard_rescans_total", "Walks of the cgroup tree after start-up.",
		m->watch.rescans > 0 ? m->watch.rescans - 1 : 0);
	counter(f, "wbguard_rescan_removals_total", "Removals found by a rescan rather than by an event.",
		m->watch.rescan_removals);
	counter(f, "wbguard_systemd_stop_jobs_total", "systemd stop jobs seen on the bus.", m->systemd_stop_jobs);
	counter(f, "wbguard_bus_disconnects_total", "Times the system bus went away.", m->bus_disconnects);
	gauge(f, "wbguard_tracked_cgroups", "Cgroups wbguardd tracks now.", (double)m->reg.n);
	gauge(f, "wbguard_flush_workers_busy", "Flush worker threads inside a flush now.",
	      (double)flush_pool_busy(m->pool));
	gauge(f, "wbguard_mitigation_active", "1 when wbguardd flushes for removed cgroups.", m->mitigating);
	gauge(f, "wbguard_system_bus_connected", "1 while wbguardd is subscribed to systemd.", m->bus ? 1 : 0);

	metric_family(f, "wbguard_bpf_programs_loaded", "gauge",
		      "1 when the BPF program group runs on this kernel; 0 means its counters are missing.");
	for (unsigned g = 0; g < ELEMENTSOF(groups); g++)
		fprintf(f, "wbguard_bpf_programs_loaded{group=\"%s\"} %d\n", groups[g],
			(wbg_bpf_groups(m->bpf) & (1U << g)) ? 1 : 0);

	manager_refresh_verdict(m);
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

	write_kernel(f, m);
	counter(f, "wbguard_scrapes_total", "Scrapes of this endpoint.", m->scrapes);
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
		manager_drop_reported(m);
	} else if (strcmp(url, "/") == 0)
		fputs("wbguardd: see /metrics\n", f);
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
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES)
		(void)sd_event_add_time_relative(m->event, &m->mhd_timer_source, CLOCK_MONOTONIC, ms * 1000, 0,
						 on_mhd_timer, m);
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
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
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
	char tmp[sizeof(m->cfg.metrics_textfile) + 16];
	uint64_t now = 0;
	FILE *f;

	if (!m->cfg.metrics_textfile[0])
		return;
	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &now);
	if (!force && now - m->textfile_written_usec < 5ULL * 1000 * 1000)
		return;
	m->textfile_written_usec = now;
	snprintf(tmp, sizeof(tmp), "%s.tmp", m->cfg.metrics_textfile);
	f = fopen(tmp, "we");
	if (!f) {
		log_warning_errno(errno, "Cannot write %s", tmp);
		return;
	}
	metrics_write(m, f);
	manager_drop_reported(m);
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) < 0) {
		log_warning_errno(errno, "Cannot write %s", tmp);
		fclose(f);
		(void)unlink(tmp);
		return;
	}
	fclose(f);
	if (rename(tmp, m->cfg.metrics_textfile) < 0) {
		log_warning_errno(errno, "Cannot rename %s", tmp);
		(void)unlink(tmp);
	}
}
