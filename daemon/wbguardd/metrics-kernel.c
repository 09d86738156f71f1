/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel's side of the metrics, from the BPF counters: fallback paths,
 * foreign flushes, dirty-throttle pauses and wb switches, node-wide and per
 * cgroup. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wbg-kernel.h"
#include "wbg-base.h"
#include "series.h"
#include "wbg-metrics.h"
#include "metrics-kernel.h"

/* A cgroup's labels, the same four on every per-cgroup series: id as
 * cAdvisor has it (the path from the cgroupfs root with a leading '/'),
 * escaped; pod, namespace and container (cAdvisor's names too) when the OCI
 * hook registered it, or, for a pod-level cgroup, the pod of a registered
 * container below it; blank where unknown. NULL for cgroups we cannot name:
 * their counts are in the node-wide totals only. */
static char *cgroup_labels(const struct wbg_kernel_view *m, uint64_t id)
{
	const char *path = series_cgroup_path(m->series, id);
	struct wbg_container_names names;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (!path)
		return NULL;
	if (strlen(path) > WBG_LABEL_PATH_MAX) {
		/* a tenant's deep chain would make every scrape megabytes */
		if (m->too_long)
			(*m->too_long)++;
		return NULL;
	}
	if (!(f = open_memstream(&buf, &n)))
		return NULL;
	containers_names(m->containers, path, &names);
	{
		const char *k[] = { "pod", "namespace", "container" }, *v[] = { names.pod, names.namespace, names.container };

		fputs("id=\"/", f);
		metric_label_value(f, path);
		fputc('"', f);
		for (size_t i = 0; i < ELEMENTSOF(k); i++) {
			fprintf(f, ",%s=\"", k[i]);
			metric_label_value(f, v[i]);
			fputc('"', f);
		}
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Per-target-cgroup foreign flush results; several error codes fold into
 * "other", and cgroups sharing a path into one series. */
struct rows_ctx {
	const struct wbg_kernel_view *m;
	struct metric_rows rows;
};

static int add_wbid(uint64_t cgroup_id, const struct wbg_wbid_counts *n, void *userdata)
{
	struct rows_ctx *c = userdata;
	_cleanup_free_ char *id = cgroup_id ? cgroup_labels(c->m, cgroup_id) : NULL;

	if (!id) /* the lookup was never reached, or a cgroup we cannot name */
		return 0;
	for (unsigned r = 0; r < _WBG_WBID_RESULT_MAX; r++)
		for (unsigned st = 0; st < 3; st++) {
			_cleanup_free_ char *labels = NULL;
			int k;

			if (!n->n[r][st])
				continue;
			if (asprintf(&labels, "%s,result=\"%s\",target=\"%s\"", id, wbg_wbid_result_to_string(r),
				     wbg_target_state_to_string(st)) < 0)
				return -ENOMEM;
			k = metric_rows_add(&c->rows, labels, (double)n->n[r][st]);
			if (k < 0)
				return k;
		}
	return 0;
}

static void write_cgroup_wbid(FILE *f, const struct wbg_kernel_view *m)
{
	struct rows_ctx c = { .m = m };

	metric_family(f, "wbguard_cgroup_foreign_flushes_total", "counter",
		      "The kernel's foreign flushes to this cgroup's wbs, by result and by whether it was dying then.");
	if (wbg_bpf_foreach_wbid(m->bpf, add_wbid, &c) < 0)
		metric_rows_free(&c.rows);
	metric_rows_write(f, "wbguard_cgroup_foreign_flushes_total", &c.rows);
}

/* The per-cgroup pause and switch series, in one pass over the map, each
 * cgroup's labels made once. */
enum { ROWS_PAUSES, ROWS_PAUSE_SECONDS, ROWS_SWITCHES, _ROWS_MAX };

struct stats_rows {
	const struct wbg_kernel_view *m;
	struct metric_rows rows[_ROWS_MAX];
};

static int add_stats(uint64_t id, const struct wbg_cgroup_stats *st, void *userdata)
{
	struct stats_rows *c = userdata;
	_cleanup_free_ char *labels = NULL;
	int r = 0;

	if (!st->pauses && !st->switches_from)
		return 0;
	labels = cgroup_labels(c->m, id);
	if (!labels)
		return 0;
	if (st->pauses) {
		r = metric_rows_add(&c->rows[ROWS_PAUSES], labels, (double)st->pauses);
		if (r == 0)
			r = metric_rows_add(&c->rows[ROWS_PAUSE_SECONDS], labels, st->pause_ms / 1000.0);
	}
	if (r == 0 && st->switches_from)
		r = metric_rows_add(&c->rows[ROWS_SWITCHES], labels, (double)st->switches_from);
	return r;
}

static void write_rows(FILE *f, const char *name, const char *help, struct metric_rows *rows)
{
	metric_family(f, name, "counter", help);
	metric_rows_write(f, name, rows);
}

static bool attached(const struct wbg_kernel_view *m, const char *prog)
{
	return m->bpf && wbg_bpf_attached(m->bpf, prog) > 0;
}

static int write_prog(const char *name, bool ok, const char *why, void *userdata)
{
	FILE *f = userdata;

	/* the reason is one of a few words (the log has the details) */
	fprintf(f, "wbguard_bpf_program_attached{program=\"%s\",reason=\"%s\"} %d\n", name, why, ok);
	return 0;
}

/* The kernel's side, from the BPF counters: exact node-wide totals, then
 * the per-cgroup series. A family is left out when its program is not
 * attached, so a missing counter never reads as zero. */
/* The bytes still dirty on dying wbs, from the kernel's own accounting
 * (wb_stats' WbReclaimable and WbWriteback, 6.10+) of the wbs whose cgroup
 * was removed and is not yet released: per device, and per removed cgroup
 * while wbguardd watches it. What its replacement's writes can wait behind
 * on a kernel without the dying-wb fallback; 0 rows where none is dirty,
 * no family where wb_stats cannot say. */
static void write_dying(FILE *f, const struct wbg_kernel_view *m)
{
	_cleanup_free_ struct wbg_dirty_wb *wbs = NULL;
	struct metric_rows dev = { 0 }, cg = { 0 };
	size_t n = 0;
	int r = 0;

	if (!m->debugfs || wbstats_dirty_wbs(m->debugfs, m->named, &wbs, &n) < 0)
		return;
	for (size_t i = 0; i < n && r >= 0; i++) {
		char labels[48];

		if (!series_cgroup_dying(m->series, wbs[i].cg_ino))
			continue;
		if (wbs[i].has_dev) {
			snprintf(labels, sizeof(labels), "device=\"%u:%u\"", wbs[i].major, wbs[i].minor);
			r = metric_rows_add(&dev, labels, (double)wbs[i].dirty_bytes);
		}
		if (r >= 0 && m->per_cgroup && m->watched && m->watched(m->watched_userdata, wbs[i].cg_ino)) {
			_cleanup_free_ char *id = cgroup_labels(m, wbs[i].cg_ino);

			if (id)
				r = metric_rows_add(&cg, id, (double)wbs[i].dirty_bytes);
		}
	}
	if (r < 0) {
		metric_rows_free(&dev);
		metric_rows_free(&cg);
		return;
	}
	metric_family(f, "wbguard_dying_wb_dirty_bytes", "gauge",
		      "Bytes dirty or under writeback on the dying wbs of removed cgroups, per device (wb_stats).");
	metric_rows_write(f, "wbguard_dying_wb_dirty_bytes", &dev);
	if (m->per_cgroup) {
		metric_family(f, "wbguard_cgroup_dying_wb_dirty_bytes", "gauge",
			      "Bytes dirty or under writeback on a watched removed cgroup's dying wbs (wb_stats).");
		metric_rows_write(f, "wbguard_cgroup_dying_wb_dirty_bytes", &cg);
	} else
		metric_rows_free(&cg);
}

void metrics_write_kernel(FILE *f, const struct wbg_kernel_view *m)
{
	struct stats_rows cs = { .m = m };
	uint64_t t[_WBG_TOTAL_MAX];

	metric_family(f, "wbguard_bpf_program_attached", "gauge",
		      "1 when the BPF program runs on this kernel; 0 with the reason its counters are missing "
		      "(not_requested, no_kernel_hook, other_event_shape, load_refused: the kernel's verifier refused its "
		      "group, attach_failed; idle: attached only while it has "
		      "work, as the per-folio expiry program while no pod has a per-pod expiry; the log says more).");
	(void)wbg_bpf_foreach_program(m->bpf, write_prog, f);
	write_dying(f, m);
	if (!m->bpf || wbg_bpf_totals(m->bpf, t) < 0)
		return;
	if (m->per_cgroup && (attached(m, "path_bdp") || attached(m, "path_switch")) &&
	    wbg_bpf_foreach_cgroup_stats(m->bpf, add_stats, &cs) < 0)
		for (unsigned i = 0; i < _ROWS_MAX; i++)
			metric_rows_free(&cs.rows[i]);
	if (attached(m, "wbid_exit")) {
		metric_family(f, "wbguard_kernel_foreign_flushes_total", "counter",
			      "The kernel's foreign flushes (cgroup_writeback_by_id) by result and by whether the "
			      "target memcg was dying: enoent to a dying target is the stall.");
		for (unsigned r = 0; r < 3; r++)
			for (unsigned st = 0; st < 3; st++)
				fprintf(f, "wbguard_kernel_foreign_flushes_total{result=\"%s\",target=\"%s\"} %" PRIu64 "\n",
					wbg_wbid_result_to_string(r), wbg_target_state_to_string(st), t[WBG_T_WBID + r * 3 + st]);
	}
	if (attached(m, "wbid_lookup_dying")) {
		const char *n = "wbguard_kernel_dying_wb_lookups_total";

		metric_family(f, n, "counter",
			      "The dying-wb fallback's lookups (wb_get_lookup_dying()): calls that found a dying wb, and that did not.");
		metric_labelled(f, n, "result", "found", t[WBG_T_LOOKUP_DYING_FOUND]);
		metric_labelled(f, n, "result", "none", t[WBG_T_LOOKUP_DYING_NONE]);
	}
	if (attached(m, "path_bdev_flush") || attached(m, "path_bdev_wb"))
		metric_counter(f, "wbguard_kernel_bdev_flushes_total",
			"Foreign block-device page caches the kernel wrote back on their own (the separate bdev flush).",
			t[WBG_T_BDEV_FLUSH]);
	if (attached(m, "path_frn_exit")) {
		metric_counter(f, "wbguard_kernel_bdev_flush_work_total", "memcg_bdev_frn_flusher work items run.",
			t[WBG_T_FRN_WORK]);
		metric_value(f, "wbguard_kernel_bdev_flush_work_seconds_total", "counter",
				 "Time memcg_bdev_frn_flusher work items took.", t[WBG_T_FRN_WORK_NS] / 1e9);
	}
	if (attached(m, "path_fforeign") || attached(m, "path_fforeign_dev")) {
		const char *n = "wbguard_kernel_foreign_flush_requests_total";

		metric_family(f, n, "counter",
			      "writeback:flush_foreign events: flushes of another cgroup's wb (kind wb) or of a "
			      "block device's page cache on its own (kind bdev: the separate bdev flush).");
		metric_labelled(f, n, "kind", "wb", t[WBG_T_FLUSH_FOREIGN_WB]);
		metric_labelled(f, n, "kind", "bdev", t[WBG_T_FLUSH_FOREIGN_BDEV]);
	}
	if (attached(m, "path_fdirty") || attached(m, "path_fdirty_dev")) {
		const char *n = "wbguard_kernel_foreign_dirty_total";

		metric_family(f, n, "counter",
			      "writeback:track_foreign_dirty events: folios dirtied against another cgroup's wb, by "
			      "whose page cache (a file's or a block device's) and the path the kernel took for it "
			      "(owner_wb: flush the owner's whole wb; bdev: the separate flush of the device's page cache).");
		fprintf(f, "%s{folio=\"file\",path=\"owner_wb\"} %" PRIu64 "\n", n, t[WBG_T_FOREIGN_DIRTY_WB]);
		fprintf(f, "%s{folio=\"bdev\",path=\"owner_wb\"} %" PRIu64 "\n", n,
			t[WBG_T_FOREIGN_DIRTY_BDEV_SHARED]);
		fprintf(f, "%s{folio=\"bdev\",path=\"bdev\"} %" PRIu64 "\n", n, t[WBG_T_FOREIGN_DIRTY_BDEV]);
	}
	if (attached(m, "path_bdp")) {
		metric_counter(f, "wbguard_kernel_dirty_throttle_pauses_total",
			"Writers put to sleep in balance_dirty_pages(), node-wide.", t[WBG_T_BDP_PAUSES]);
		metric_value(f, "wbguard_kernel_dirty_throttle_pause_seconds_total", "counter",
				 "Time writers were put to sleep in balance_dirty_pages(), node-wide.",
				 t[WBG_T_BDP_PAUSE_MS] / 1000.0);
		if (m->per_cgroup) {
			write_rows(f, "wbguard_cgroup_dirty_throttle_pauses_total",
				   "Sleeps of this cgroup's writers in balance_dirty_pages().", &cs.rows[ROWS_PAUSES]);
			write_rows(f, "wbguard_cgroup_dirty_throttle_pause_seconds_total",
				   "Time this cgroup's writers slept in balance_dirty_pages(): the stall itself.",
				   &cs.rows[ROWS_PAUSE_SECONDS]);
		}
	}
	if (attached(m, "path_switch")) {
		metric_counter(f, "wbguard_kernel_inode_wb_switches_total",
			"Inodes switched between cgroup wbs (a storm of them costs system CPU); rate() gives switches per second.",
			t[WBG_T_SWITCHES]);
		if (m->per_cgroup)
			write_rows(f, "wbguard_cgroup_inode_wb_switches_total",
				   "Inodes switched away from this cgroup's wbs.", &cs.rows[ROWS_SWITCHES]);
	}
	if (attached(m, "life_rmdir"))
		metric_counter(f, "wbguard_bpf_events_lost_total",
			       "Cgroup removals and releases the BPF ring buffer had no room for (inotify still "
			       "reports removals; a lost release leaves series until the LRU evicts them).",
			       t[WBG_T_LIFE_LOST]);
	if (attached(m, "wbid_exit")) {
		metric_counter(f, "wbguard_kernel_stall_reports_total",
			       "Dying cgroups nothing watched whose foreign flush got -ENOENT, reported to wbguardd "
			       "(once each until its handover ends).",
			       t[WBG_T_STALL_EVENTS]);
		metric_counter(f, "wbguard_kernel_stall_repeats_total",
			       "-ENOENT foreign flushes to a dying cgroup already reported: counted only.",
			       t[WBG_T_STALL_REPEATS]);
	}
	if (attached(m, "dirty_inode")) {
		metric_family(f, "wbguard_bpf_inode_records_refused_total", "counter",
			      "Cgroups whose inode records were cut short, by reason: their tenant's share "
			      "([flush] max_inodes_per_tenant) was full, the tenant was above its floor and the pool "
			      "above floors was taken, the per-cgroup count table was full, the cgroup-to-tenant map "
			      "was, or the cgroup was not tracked (untracked: per dirtying). Their sets are incomplete: "
			      "their handovers flush whole filesystems.");
		fprintf(f, "wbguard_bpf_inode_records_refused_total{reason=\"tenant_share\"} %" PRIu64 "\n",
			t[WBG_T_INODES_TENANT_FULL]);
		fprintf(f, "wbguard_bpf_inode_records_refused_total{reason=\"tenant_pool\"} %" PRIu64 "\n",
			t[WBG_T_INODES_POOL_FULL]);
		fprintf(f, "wbguard_bpf_inode_records_refused_total{reason=\"untracked\"} %" PRIu64 "\n",
			t[WBG_T_INODES_UNTRACKED]);
		fprintf(f, "wbguard_bpf_inode_records_refused_total{reason=\"cgroups_full\"} %" PRIu64 "\n",
			t[WBG_T_INODES_CGROUPS_FULL]);
		fprintf(f, "wbguard_bpf_inode_records_refused_total{reason=\"tenant_map_full\"} %" PRIu64 "\n",
			wbg_bpf_tenant_map_full(m->bpf));
		metric_counter(f, "wbguard_bpf_special_inodes_total",
			       "Dirtied inodes that were no regular files (FIFOs, sockets, directories, device nodes on "
			       "a filesystem): their filesystem noted, the inode never recorded nor opened.",
			       t[WBG_T_SPECIAL_INODES]);
	}
	if (m->per_cgroup && attached(m, "wbid_exit"))
		write_cgroup_wbid(f, m);
	for (unsigned i = 0; i < _ROWS_MAX; i++) /* the families not written */
		metric_rows_free(&cs.rows[i]);
}

