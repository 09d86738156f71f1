/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel verdicts as the daemon holds them: refreshed from the BPF
 * evidence (and the mitigation following them), probed without change for
 * Verify, and what status says of the stall as evidence. Below the bus, the
 * lifecycle's world and the reload, which all ask for a refresh.
 */
#include <inttypes.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include "wbg-kernel.h"
#include "wbg-handover.h"
#include "wbg-base.h"
#include "wbg-metrics.h"
#include "manager.h"

void manager_probe_verdict(const struct manager *m, struct wbg_verdicts *ret)
{
	struct wbg_verdicts v = m->verdicts;

	if (m->bpf)
		(void)wbg_bpf_evidence(m->bpf, &v.evidence);
	v.dying_wb = verdict_dying_wb(&v.evidence);
	v.bdev_flush = verdict_bdev_flush(&v.evidence);
	*ret = v;
}

/* The stall of cgroups nothing watches is news only while mitigating, and
 * only once the ring it comes on is read: set at each verdict and when the
 * ring opens (a removal wbguardd was down for can stall within seconds of
 * its start, not only after the first verdict refresh). */
void manager_stall_events_update(struct manager *m)
{
	wbg_bpf_stall_enable(m->bpf, m->mitigating && m->cfg.flush);
}

void manager_refresh_verdict(struct manager *m)
{
	struct wbg_evidence e = m->verdicts.evidence;
	enum wbg_verdict dying = m->verdicts.dying_wb, bdev = m->verdicts.bdev_flush;
	bool on;

	if (m->bpf)
		(void)wbg_bpf_evidence(m->bpf, &e);
	verdicts_update(&m->verdicts, &e, manager_now_usec(m));
	/* a change, for journalctl MESSAGE_ID= (the first one at start too) */
	if (log_to_journal() && (dying != m->verdicts.dying_wb || bdev != m->verdicts.bdev_flush))
		(void)sd_journal_send("MESSAGE=Kernel verdicts: dying-wb fallback %s, separate bdev flush %s",
				      wbg_verdict_to_string(m->verdicts.dying_wb),
				      wbg_verdict_to_string(m->verdicts.bdev_flush), "MESSAGE_ID=" WBG_MESSAGE_VERDICT,
				      "PRIORITY=%d", LOG_NOTICE, "SYSLOG_IDENTIFIER=wbguardd",
				      "WBGUARD_DYING_WB_FALLBACK=%s", wbg_verdict_to_string(m->verdicts.dying_wb),
				      "WBGUARD_BDEV_FOREIGN_FLUSH=%s", wbg_verdict_to_string(m->verdicts.bdev_flush), NULL);
	/* on, off; auto: on unless the kernel shows it reaches dying wbs
	 * itself (and a reload that changed the mode takes effect here) */
	on = m->cfg.mitigation == WBG_MITIGATION_ON ||
	     (m->cfg.mitigation == WBG_MITIGATION_AUTO && m->verdicts.dying_wb != WBG_VERDICT_ACTIVE);
	if (m->mitigating != on) {
		m->mitigating = on;
		log_info("Mitigation %s (mode %s, dying-wb fallback %s)", on ? "on" : "off",
			 m->cfg.mitigation == WBG_MITIGATION_ON ? "on" : m->cfg.mitigation == WBG_MITIGATION_OFF ? "off" : "auto",
			 wbg_verdict_to_string(m->verdicts.dying_wb));
	}
	lifecycle_set_mitigating(&m->lifecycle, m->mitigating);
	manager_stall_events_update(m);
	if (m->ready) {
		manager_notify_status(m);
		manager_nfd_update(m, m->mitigating);
	}
}

/* Handed to the writer's thread, never written on the loop (a stalled disk
 * would stall it); a failed write is logged and counted there, and made
 * again at the next renewal. */
void manager_nfd_update(struct manager *m, bool guarded)
{
	struct wbg_nfd_labels l = { .dying_wb_fallback = wbg_verdict_to_string(m->verdicts.dying_wb), .guarded = guarded };
	struct timespec now;
	char *text;
	int r;

	if (!m->nfd_writer)
		return;
	/* the file's expiry-time is the node's wall clock, as nfd-worker
	 * compares it */
	clock_gettime(CLOCK_REALTIME, &now);
	r = nfd_features_update(&m->nfd, &l, (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000, &text);
	if (r < 0)
		log_warning_errno(r, "Cannot make the node-feature-discovery labels");
	else if (r > 0)
		textfile_submit(m->nfd_writer, m->cfg.metrics_nfd_features, text);
}

/* systemctl status's line: what it does now, not that it started. Sent at
 * each verdict refresh (every 10 s, a reload, a handover's end at most
 * every 10 s), so it is never older than that. */
void manager_notify_status(const struct manager *m)
{
	const struct wbg_lifecycle *lc = &m->lifecycle;
	(void)sd_notifyf(false,
			 "STATUS=%zu cgroups; %zu handovers in progress (%zu watched), %" PRIu64
			 " ended; flush %s; mitigation %s (dying-wb fallback %s)",
			 m->reg.n, lifecycle_n_active(lc), lifecycle_n_watched(lc), lifecycle_total(lc),
			 lc->params.at_exit ? "exit" : lc->params.on_evidence ? "on-evidence" : "eager",
			 m->mitigating ? "on" : "off", wbg_verdict_to_string(m->verdicts.dying_wb));
}

const char *manager_stall_evidence(const struct manager *m)
{
	if (wbg_bpf_stall_enabled(m->bpf))
		return "yes";
	if (wbg_bpf_stall_supported(m->bpf))
		return "off: [mitigation] mode or [flush] enable is off";
	return "no: only removals seen live are protected";
}
