/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's metric families. */
#include <inttypes.h>

#include "lifecycle-internal.h"
#include "wbg-metrics.h"

void lifecycle_metrics(FILE *f, const struct wbg_lifecycle *lc)
{
	const struct wbg_end_stats *end = lc_end_stats(lc);
	const struct wbg_engine_stats *eng = lc_engine_stats(lc);
	const struct wbg_event_stats *ev = lc_event_stats(lc);
	const struct wbg_plan_stats *plan = lc_plan_stats(lc);
	const struct wbg_stall_stats *stall = lc_stall_stats(lc);
	const struct wbg_watch_stats *watch = lc_watch_stats(lc);

	metric_family(f, "wbguard_handovers_total", "counter",
		      "Handovers of cgroups going away, by what started them and how they ended.");
	for (unsigned t = 0; t < _WBG_TRIGGER_MAX; t++)
		for (unsigned o = 0; o < _WBG_OUTCOME_MAX; o++)
			if (end->by[t][o] || o == WBG_OUTCOME_FLUSHED)
				fprintf(f, "wbguard_handovers_total{trigger=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
					wbg_trigger_to_string(t), wbg_outcome_to_string(o), end->by[t][o]);
	metric_family(f, "wbguard_handover_reaction_seconds", "histogram",
		      "From the first sign of a cgroup going away (on-evidence: the evidence) to the first flush "
		      "issued for it.");
	metric_hist(f, "wbguard_handover_reaction_seconds", &end->reaction);
	metric_family(f, "wbguard_flush_duration_seconds", "histogram",
		      "From the first flush issued for a handover to all of its targets done.");
	metric_hist(f, "wbguard_flush_duration_seconds", &end->flush_duration);
	metric_counter(f, "wbguard_flushed_device_bytes_total", "Bytes written to block devices while handover flushes ran.",
		       end->flushed_device_bytes);
	metric_counter(f, "wbguard_cleanup_cycles_total", "Scratch memcg cycles that re-ran the kernel's offline-wb cleanup.",
		       eng->cleanup_cycles);
	metric_counter(f, "wbguard_cleanup_failures_total", "Scratch memcg cycles that failed.", eng->cleanup_failures);
	metric_counter(f, "wbguard_dying_wb_dirty_after_handover_total",
		       "Handovers after which wb_stats still showed a dirty dying wb of the cgroup.", watch->verify_dirty);
	metric_counter(f, "wbguard_handover_plans_evicted_total",
		       "Handovers planned from the mount table because their cgroup's BPF set may have been evicted.",
		       ev->plans_set_evicted);
	metric_value(f, "wbguard_handovers_active", "gauge", "Handovers in progress now (watched ones included).",
		     (double)lifecycle_n_active(lc));
	lc_waiters_metrics(f, lc);

	metric_family(f, "wbguard_flush_mode", "gauge", "The flush mode in effect: 1 on its mode.");
	fprintf(f, "wbguard_flush_mode{mode=\"eager\"} %d\n", !lc->params.on_evidence && !lc->params.at_exit);
	fprintf(f, "wbguard_flush_mode{mode=\"on-evidence\"} %d\n", lc->params.on_evidence);
	fprintf(f, "wbguard_flush_mode{mode=\"exit\"} %d\n", lc->params.at_exit);
	metric_counter(f, "wbguard_exit_flushes_total",
		       "Handovers whose first flush was the exit recipe (their own inodes as their cgroup emptied).",
		       ev->exit_flushes);
	metric_family(f, "wbguard_exit_flush_targets_total", "counter",
		      "The exit recipe's filesystems, by how: its own inodes, or syncfs for want of a complete inode set.");
	fprintf(f, "wbguard_exit_flush_targets_total{how=\"inodes\"} %" PRIu64 "\n", ev->exit_targets_inodes);
	fprintf(f, "wbguard_exit_flush_targets_total{how=\"syncfs\"} %" PRIu64 "\n", ev->exit_targets_syncfs);
	lc_watch_metrics(f, lc);
	metric_counter(f, "wbguard_handover_inode_records_evicted_total",
		       "Inode records of a flushed cgroup that the BPF LRU evicted (its flush was a syncfs then).",
		       plan->inode_records_evicted);
	metric_counter(f, "wbguard_dying_evidence_inodes_added_total",
		       "Evidence flushes that wrote the inode the evidence named although its record was gone.",
		       plan->evidence_inodes_added);
	metric_family(f, "wbguard_stall_reports_total", "counter",
		      "Failed foreign flushes to dying cgroups nothing watched, as BPF reported them (once per "
		      "cgroup): a handover started, one covered it already, the device's rate was used up, its "
		      "tenant's share of that was, its path was outside [daemon] roots, or mitigation was off.");
	fprintf(f, "wbguard_stall_reports_total{result=\"started\"} %" PRIu64 "\n", stall->started);
	fprintf(f, "wbguard_stall_reports_total{result=\"covered\"} %" PRIu64 "\n", stall->covered);
	fprintf(f, "wbguard_stall_reports_total{result=\"capped\"} %" PRIu64 "\n", stall->capped);
	fprintf(f, "wbguard_stall_reports_total{result=\"tenant_capped\"} %" PRIu64 "\n", stall->tenant_capped);
	fprintf(f, "wbguard_stall_reports_total{result=\"out_of_scope\"} %" PRIu64 "\n", stall->out_of_scope);
	fprintf(f, "wbguard_stall_reports_total{result=\"off\"} %" PRIu64 "\n", stall->off);
	metric_counter(f, "wbguard_flush_late_jobs_total",
		       "Flush jobs of a round that had timed out, finishing later: not counted against the next round.",
		       eng->late_jobs);
	metric_counter(f, "wbguard_stall_retry_full_total",
		       "Capped stalls the retry FIFO (256) had no room for: re-armed at once, reported again at their "
		       "next failed flush.",
		       stall->retry_full);
	metric_counter(f, "wbguard_handover_invalid_steps_total",
		       "Events a handover's phase must not see; each ended that handover (logged).", eng->invalid_steps);
}
