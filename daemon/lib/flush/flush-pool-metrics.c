/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The flush pool's metric families: its workers, its jobs and the budget,
 * per target. */
#include <errno.h>
#include <inttypes.h>
#include <sys/sysmacros.h>

#include "flush-pool.h"
#include "wbg-metrics.h"

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	metric_value(f, name, "gauge", help, v);
}

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
	    metric_rows_add(rows[3], labels, (double)st->budget_waits) < 0 ||
	    metric_rows_add(rows[4], labels, (double)st->exit_bytes) < 0)
		return -ENOMEM;
	return 0;
}

void flush_pool_metrics(FILE *f, struct flush_pool *p)
{
	{
		struct flush_pool_stats ps;

		flush_pool_stats(p, &ps);
		gauge(f, "wbguard_flush_workers_busy", "Flush worker threads inside a flush now.", (double)ps.busy);
		gauge(f, "wbguard_flush_workers_stuck",
		      "Flush workers still inside a flush past its timeout (replaced by new threads).", (double)ps.stuck);
		metric_counter(f, "wbguard_flush_stuck_total", "Flushes given up on as stuck past their timeout.",
			       ps.stuck_total);
		metric_counter(f, "wbguard_flush_refused_busy_total",
			       "Flush requests refused: the target's waiting jobs (16 of 4,096 waiters each) were full.",
			       ps.refused_busy);
		metric_counter(f, "wbguard_flush_overflow_jobs_total",
			       "Flush requests queued as the next waiting job behind one of 4,096 waiters (a restart's "
			       "pending records on one filesystem), not refused.",
			       ps.overflows);
		metric_counter(f, "wbguard_flush_inodes_capped_total",
			       "Merged jobs whose inode list hit its bound and became a syncfs.", ps.inodes_capped);
		gauge(f, "wbguard_flush_inode_handles_available",
		      "1 when wbguardd may open files by handle (per-inode flushes of a cgroup's own data); 0: refused "
		      "(no CAP_DAC_READ_SEARCH, or seccomp), so those flushes are syncfs, held by the budget.",
		      ps.handles_available);
		metric_counter(f, "wbguard_flush_handle_fallbacks_total",
			       "Per-inode flush jobs whose handles were refused: a syncfs instead.", ps.handle_fallbacks);
		metric_counter(f, "wbguard_flush_inodes_skipped_total",
			       "Inodes in a flush's set that were no regular files (FIFOs, sockets, device nodes): never "
			       "opened, never written.",
			       ps.inodes_skipped);
		metric_counter(f, "wbguard_flush_jobs_total", "Flush jobs started (one per filesystem or block device).",
			       ps.jobs_started);
		metric_counter(f, "wbguard_flush_budget_waits_total",
			       "Flush jobs held back by the budget ([flush] fs_interval_sec).", ps.budget_waits);
		metric_value(f, "wbguard_flush_budget_wait_seconds_total", "counter",
			     "Time flush jobs spent held back by the budget.", (double)ps.budget_wait_usec / 1e6);
	}
	{
		struct metric_rows jobs = { 0 }, calls = { 0 }, bytes = { 0 }, waits = { 0 }, exit_bytes = { 0 };

		(void)flush_pool_foreach_target(p, target_rows,
						(struct metric_rows *[]){ &jobs, &calls, &bytes, &waits, &exit_bytes });
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
		metric_family(f, "wbguard_flush_target_exit_bytes_total", "counter",
			      "Bytes written to the device while the exit recipe's flushes of it ran ([flush] "
			      "exit_bytes_per_sec bounds their rate).");
		metric_rows_write(f, "wbguard_flush_target_exit_bytes_total", &exit_bytes);
	}
}
