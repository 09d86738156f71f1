/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handover lifecycle's clock and audience (lifecycle.h): the loop's
 * time and its one timer; the record, the journal and the boost; the API's
 * replies. Its flusher and kernel are the library's (lifecycle-host.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <systemd/sd-journal.h>

#include "wbg-base.h"
#include "wbg-handover.h"
#include "manager.h"
#include "timer-util.h"

static uint64_t op_now(void *userdata)
{
	return manager_now_usec(userdata);
}

static void op_schedule(void *userdata, uint64_t usec)
{
	struct manager *m = userdata;

	timer_arm_by(m->lifecycle_source, usec);
}

/* Structured fields for the journal: the handover, its cgroup and, when the
 * hook registered it, its pod. */
static void log_handover(struct manager *m, const struct wbg_handover *h, const char *json)
{
	int level = h->outcome == WBG_OUTCOME_FAILED || h->outcome == WBG_OUTCOME_TIMEOUT ? LOG_WARNING : LOG_INFO;
	struct wbg_container_names n;
	_cleanup_free_ char *path = NULL, *msg = NULL;

	if (level > log_get_max_level())
		return;
	if (!log_to_journal()) {
		log_full_errno(level, 0, "handover %" PRIu64 " %s: %s", h->id, h->path, json);
		return;
	}
	containers_names(&m->containers, h->path, &n);
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
			      "WBGUARD_TRIGGER=%s", wbg_trigger_to_string(h->trigger), "WBGUARD_POD=%s", n.pod,
			      "WBGUARD_NAMESPACE=%s", n.namespace, "WBGUARD_CONTAINER=%s", n.container,
			      "WBGUARD_CONTAINER_ID=%s", n.container_id, NULL);
}

#define VERDICT_AT_END_USEC (10ULL * 1000 * 1000)

static void op_ended(void *userdata, const struct wbg_handover *h, const char *json)
{
	struct manager *m = userdata;

	expiry_handover_ended(&m->expiry, h);
	log_handover(m, h, json);
	records_append(&m->records, json);
	/* new evidence comes with use; at most every 10 s, never by a reader */
	if (op_now(m) - m->verdicts.checked_usec > VERDICT_AT_END_USEC)
		manager_refresh_verdict(m);
	metrics_textfile_update(m, false);
}

static void op_reply(void *userdata, void *call, uint64_t id, const char *outcome, const char *reason)
{
	int r = sd_bus_reply_method_return(call, "tss", id, outcome, reason ? reason : "");

	if (r < 0)
		log_debug_errno(r, "Cannot reply to FlushCgroup (the caller left?)");
}

static void *op_call_ref(void *userdata, void *call)
{
	return sd_bus_message_ref(call);
}

static void op_call_unref(void *userdata, void *call)
{
	sd_bus_message_unref(call);
}

static const struct wbg_clock_ops clock_ops = {
	.now = op_now,
	.schedule = op_schedule,
};

static const struct wbg_audience_ops audience_ops = {
	.ended = op_ended,
	.reply = op_reply,
	.call_ref = op_call_ref,
	.call_unref = op_call_unref,
};

/* The lifecycle's world: the host's flusher and kernel (lifecycle-host.c),
 * the loop's clock and the daemon's audience. */
struct wbg_lifecycle_world manager_lifecycle_world(struct manager *m)
{
	return (struct wbg_lifecycle_world){
		.clock = &clock_ops,
		.clock_data = m,
		.flusher = &lifecycle_host_flusher_ops,
		.flusher_data = &m->lifecycle_host,
		.kernel = &lifecycle_host_kernel_ops,
		.kernel_data = &m->lifecycle_host,
		.audience = &audience_ops,
		.audience_data = m,
	};
}
