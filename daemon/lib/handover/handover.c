/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <json-c/json.h>

#include "wbg-runtime.h"
#include "handover.h"
#include "wbg-base.h"

static const char *const triggers[] = {
	[WBG_TRIGGER_POPULATED_0] = "populated-0", [WBG_TRIGGER_STOP_JOB] = "job",
	[WBG_TRIGGER_REMOVED] = "removed",	   [WBG_TRIGGER_RESCAN] = "rescan",
	[WBG_TRIGGER_API] = "api",		   [WBG_TRIGGER_RMDIR_BPF] = "rmdir-bpf",
	[WBG_TRIGGER_RECOVERED] = "recovered", [WBG_TRIGGER_STALL] = "stall",
};

static const char *const outcomes[] = {
	[WBG_OUTCOME_PENDING] = "pending",	 [WBG_OUTCOME_FLUSHED] = "flushed",
	[WBG_OUTCOME_CLEAN] = "clean",		 [WBG_OUTCOME_NO_TARGETS] = "no-targets",
	[WBG_OUTCOME_FAILED] = "failed",	 [WBG_OUTCOME_TIMEOUT] = "timeout",
	[WBG_OUTCOME_DISABLED] = "disabled",	 [WBG_OUTCOME_CHILDREN] = "children",
	[WBG_OUTCOME_INTERRUPTED] = "interrupted", [WBG_OUTCOME_DRAINED] = "drained",
};

const char *wbg_trigger_to_string(enum wbg_trigger t)
{
	return t < _WBG_TRIGGER_MAX ? triggers[t] : "?";
}

const char *wbg_outcome_to_string(enum wbg_outcome o)
{
	return o < _WBG_OUTCOME_MAX ? outcomes[o] : "?";
}

struct wbg_handover *handover_new(uint64_t id, uint64_t cgroup_id, const char *path, enum wbg_trigger t,
				  uint64_t now)
{
	struct wbg_handover *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->path = strdup(path);
	if (!h->path) {
		free(h);
		return NULL;
	}
	h->id = id;
	h->cgroup_id = cgroup_id;
	h->trigger = t;
	h->t_trigger = now;
	h->verify = -1;
	cgroup_identity_parse(path, &h->ident);
	h->tenant = handover_tenant(path);
	return h;
}

bool handover_wants_boost(const struct wbg_handover *h, bool flush_enabled)
{
	if (h->not_own || h->outcome == WBG_OUTCOME_INTERRUPTED)
		return false;
	return h->outcome == WBG_OUTCOME_FAILED || h->outcome == WBG_OUTCOME_TIMEOUT ||
	       (h->outcome == WBG_OUTCOME_NO_TARGETS && h->dirty_known) ||
	       (h->outcome == WBG_OUTCOME_DISABLED && !flush_enabled);
}

static uint64_t fnv1a(uint64_t hash, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++)
		hash = (hash ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return hash;
}

uint64_t handover_tenant(const char *path)
{
	/* a path unknown (a stall of a cgroup removed while we were down):
	 * no tenant, 0 */
	if (!*path)
		return 0;
	/* the prefix every share keys by (the watch's tenant root, BPF's
	 * tenant map): one derivation, so a tenant is one tenant everywhere */
	return fnv1a(0xcbf29ce484222325ULL, path, cgroup_tenant_len(path)) | 1;
}

void handover_free(struct wbg_handover *h)
{
	if (!h)
		return;
	free(h->path);
	free(h);
}

/* How a cause concludes: the outcome and reason it sets, and when. */
enum conclude_rule {
	SET,            /* outcome and reason */
	IF_PENDING,     /* both, while nothing else was concluded */
	OUTCOME_PENDING, /* the outcome alone, while nothing else was */
	OUTCOME,        /* the outcome alone */
	REASON,         /* the reason alone */
	FAIL_PENDING,   /* failed while nothing else was; the reason always */
};
#define BY_FLUSHES _WBG_OUTCOME_MAX /* failed if a job failed, else flushed */

static const struct {
	enum conclude_rule rule;
	enum wbg_outcome outcome;
	const char *reason;
} causes[_WBG_CAUSE_MAX] = {
	[WBG_CAUSE_CHILDREN] = { SET, WBG_OUTCOME_CHILDREN, "its child cgroups have handovers of their own" },
	[WBG_CAUSE_CHILDREN_COVER] = { SET, WBG_OUTCOME_CHILDREN,
				       "dirtied nothing itself; its removed child cgroups' handovers cover the rest" },
	[WBG_CAUSE_MITIGATION_OFF] = { SET, WBG_OUTCOME_DISABLED, "mitigation off" },
	[WBG_CAUSE_FLUSH_OFF] = { SET, WBG_OUTCOME_DISABLED, "flush disabled ([flush] enable = no)" },
	[WBG_CAUSE_NOTHING_DIRTY] = { SET, WBG_OUTCOME_CLEAN, "file_dirty and file_writeback were 0" },
	[WBG_CAUSE_PLAN_FAILED] = { SET, WBG_OUTCOME_FAILED, "planning failed" },
	[WBG_CAUSE_NO_FILESYSTEM] = { SET, WBG_OUTCOME_NO_TARGETS, "dirty, but no filesystem to flush was found" },
	[WBG_CAUSE_EXCLUDED] = { SET, WBG_OUTCOME_NO_TARGETS, "its filesystems are excluded ([flush] exclude_fstypes)" },
	[WBG_CAUSE_NOT_OWN] = { SET, WBG_OUTCOME_NO_TARGETS, "dirty, but it dirtied no filesystem itself" },
	[WBG_CAUSE_NOTHING_RECORDED] = { SET, WBG_OUTCOME_CLEAN, "nothing dirtied was recorded" },
	[WBG_CAUSE_FILESYSTEMS_GONE] = { SET, WBG_OUTCOME_NO_TARGETS, "its filesystems are gone" },
	[WBG_CAUSE_NO_STALL_FS] = { SET, WBG_OUTCOME_NO_TARGETS, "no filesystem on the stalled device" },
	[WBG_CAUSE_OUT_OF_MEMORY] = { SET, WBG_OUTCOME_FAILED, "out of memory" },
	[WBG_CAUSE_TIMEOUT] = { SET, WBG_OUTCOME_TIMEOUT, "flush timeout" },
	[WBG_CAUSE_STOPPED_FLUSHING] = { SET, WBG_OUTCOME_INTERRUPTED, "daemon stopped during the flush" },
	[WBG_CAUSE_FLUSHES_DONE] = { OUTCOME_PENDING, BY_FLUSHES, NULL },
	[WBG_CAUSE_STOPPED_DEFERRED] = { IF_PENDING, WBG_OUTCOME_INTERRUPTED, "daemon stopped before its removal" },
	[WBG_CAUSE_STOPPED_WATCHED] = { IF_PENDING, WBG_OUTCOME_INTERRUPTED,
					"daemon stopped while its dying wb was watched" },
	[WBG_CAUSE_WATCH_FLUSHED] = { IF_PENDING, BY_FLUSHES, NULL },
	[WBG_CAUSE_WATCH_AGED_FLUSHED] = { IF_PENDING, BY_FLUSHES, "not drained at watch_max_age_sec: flushed" },
	[WBG_CAUSE_WATCH_RELEASED] = { IF_PENDING, WBG_OUTCOME_DRAINED, "released by the kernel while watched" },
	[WBG_CAUSE_WATCH_NO_WB_STATS] = { IF_PENDING, WBG_OUTCOME_DRAINED,
					  "no wb_stats: taken as drained after one expiry" },
	[WBG_CAUSE_WATCH_DRAINED] = { IF_PENDING, WBG_OUTCOME_DRAINED, "its dying wb drained by itself; no flush needed" },
	[WBG_CAUSE_ENDED_CLEAN] = { OUTCOME, WBG_OUTCOME_CLEAN, NULL },
	[WBG_CAUSE_REPOPULATED] = { REASON, WBG_OUTCOME_PENDING, "repopulated before removal" },
	[WBG_CAUSE_JOB_RELOAD] = { REASON, WBG_OUTCOME_PENDING, "job was a reload" },
	[WBG_CAUSE_JOB_NOT_STOP] = { REASON, WBG_OUTCOME_PENDING, "job was not a stop" },
	[WBG_CAUSE_JOB_DEVICE_REFUSED] = { REASON, WBG_OUTCOME_PENDING,
					   "a block device node could not be opened (a container's device cgroup refuses it)" },
	[WBG_CAUSE_JOB_TIMED_OUT] = { REASON, WBG_OUTCOME_PENDING, "a target timed out" },
	[WBG_CAUSE_JOB_FAILED] = { REASON, WBG_OUTCOME_PENDING, "a target failed (see the log)" },
	[WBG_CAUSE_INVALID_STEP] = { FAIL_PENDING, WBG_OUTCOME_FAILED, "lifecycle: an event its phase must not see (logged)" },
};

enum wbg_outcome handover_outcome_now(const struct wbg_handover *h)
{
	if (h->outcome != WBG_OUTCOME_PENDING)
		return h->outcome;
	return h->n_failed ? WBG_OUTCOME_FAILED : WBG_OUTCOME_FLUSHED;
}

void handover_conclude(struct wbg_handover *h, enum wbg_cause cause)
{
	bool pending = h->outcome == WBG_OUTCOME_PENDING;
	enum wbg_outcome o;

	if ((unsigned)cause >= _WBG_CAUSE_MAX)
		return;
	o = causes[cause].outcome == BY_FLUSHES ? handover_outcome_now(h) : causes[cause].outcome;
	switch (causes[cause].rule) {
	case IF_PENDING:
		if (pending) {
			h->outcome = o;
			h->reason = causes[cause].reason;
		}
		return;
	case SET:
		h->outcome = o;
		h->reason = causes[cause].reason;
		return;
	case OUTCOME_PENDING:
		if (pending)
			h->outcome = o;
		return;
	case OUTCOME:
		h->outcome = o;
		return;
	case REASON:
		h->reason = causes[cause].reason;
		return;
	case FAIL_PENDING:
		if (pending)
			h->outcome = o;
		h->reason = causes[cause].reason;
		return;
	}
}

void handover_job_done(struct wbg_handover *h, const struct flush_job *j)
{
	if (h->n_pending > 0)
		h->n_pending--;
	if (!h->t_first_flush || (j->started_usec && j->started_usec < h->t_first_flush))
		h->t_first_flush = j->started_usec;
	if (j->result < 0) {
		h->n_failed++;
		/* the reason a failed target was not written, for the record */
		handover_conclude(h, j->kind == FLUSH_BDEV && (j->result == -EPERM || j->result == -EACCES)
					     ? WBG_CAUSE_JOB_DEVICE_REFUSED
				     : j->result == -ETIMEDOUT ? WBG_CAUSE_JOB_TIMED_OUT
							       : WBG_CAUSE_JOB_FAILED);
	}
	h->inodes_synced += j->stats.inodes_synced;
	h->inodes_skipped += j->stats.inodes_skipped;
	h->inodes_gone += j->stats.inodes_gone;
	h->inodes_failed += j->stats.inodes_failed;
	h->device_bytes += j->device_bytes;
}

static void add_usec(struct json_object *o, const char *k, uint64_t t, uint64_t t0)
{
	if (t)
		json_object_object_add(o, k, json_object_new_double(t >= t0 ? (double)(t - t0) / 1e6 : 0));
}

struct json_object *handover_to_json(const struct wbg_handover *h, const struct wbg_container_names *names)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_uint64(h->id));
	json_object_object_add(o, "cgroup", json_object_new_string(h->path));
	json_object_object_add(o, "cgroup_id", json_object_new_uint64(h->cgroup_id));
	if (*h->ident.runtime)
		json_object_object_add(o, "runtime", json_object_new_string(h->ident.runtime));
	/* the cgroup path's (the kubelet's layouts), else the runtime's (NRI,
	 * the CRI's annotations) */
	if (h->ident.pod_uid[0])
		json_object_object_add(o, "pod_uid", json_object_new_string(h->ident.pod_uid));
	else if (names && names->pod_uid && names->pod_uid[0])
		json_object_object_add(o, "pod_uid", json_object_new_string(names->pod_uid));
	if (h->ident.container_id[0])
		json_object_object_add(o, "container_id", json_object_new_string(h->ident.container_id));
	if (h->ident.unit[0])
		json_object_object_add(o, "unit", json_object_new_string(h->ident.unit));
	if (names && names->pod[0]) {
		json_object_object_add(o, "pod", json_object_new_string(names->pod));
		json_object_object_add(o, "namespace", json_object_new_string(names->namespace));
		json_object_object_add(o, "container", json_object_new_string(names->container));
	}
	if (names && names->container_id[0])
		json_object_object_add(o, "registered_id", json_object_new_string(names->container_id));
	json_object_object_add(o, "trigger", json_object_new_string(wbg_trigger_to_string(h->trigger)));
	json_object_object_add(o, "outcome", json_object_new_string(wbg_outcome_to_string(h->outcome)));
	if (h->reason)
		json_object_object_add(o, "reason", json_object_new_string(h->reason));
	if (h->dirty_known)
		json_object_object_add(o, "dirty_bytes", json_object_new_uint64(h->dirty_bytes));
	if (h->plan_source)
		json_object_object_add(o, "plan", json_object_new_string(h->plan_source));
	if (h->route == WBG_ROUTE_EXIT) /* its first flush wrote its own inodes as it emptied */
		json_object_object_add(o, "recipe", json_object_new_string("exit"));
	json_object_object_add(o, "targets", json_object_new_int(h->n_targets));
	json_object_object_add(o, "fs_targets", json_object_new_int(h->n_fs));
	json_object_object_add(o, "inode_targets", json_object_new_int(h->n_inode_targets));
	json_object_object_add(o, "bdev_targets", json_object_new_int(h->n_bdev));
	if (h->n_excluded)
		json_object_object_add(o, "excluded_targets", json_object_new_int(h->n_excluded));
	if (h->n_targets) {
		struct json_object *a = json_object_new_array();

		for (unsigned i = 0; i < h->n_targets && i < ELEMENTSOF(h->target); i++) {
			struct json_object *t = json_object_new_object();
			char dev[32];

			snprintf(dev, sizeof(dev), "%u:%u", h->target[i].major, h->target[i].minor);
			json_object_object_add(t, "dev", json_object_new_string(dev));
			if (h->target[i].fstype[0])
				json_object_object_add(t, "fstype", json_object_new_string(h->target[i].fstype));
			json_object_object_add(t, "how", json_object_new_string(h->target[i].how));
			json_object_array_add(a, t);
		}
		json_object_object_add(o, "target_list", a);
	}
	json_object_object_add(o, "inodes_synced", json_object_new_uint64(h->inodes_synced));
	if (h->inodes_skipped) /* FIFOs, sockets, device nodes in its set: never opened */
		json_object_object_add(o, "inodes_skipped", json_object_new_uint64(h->inodes_skipped));
	if (h->inodes_gone) /* deleted since they were dirtied: nothing left to write */
		json_object_object_add(o, "inodes_gone", json_object_new_uint64(h->inodes_gone));
	if (h->inodes_failed) /* could not be opened or written (the log says why) */
		json_object_object_add(o, "inodes_failed", json_object_new_uint64(h->inodes_failed));
	json_object_object_add(o, "device_bytes", json_object_new_uint64(h->device_bytes));
	/* CLOCK_MONOTONIC of the trigger, to join with other clocks' events */
	json_object_object_add(o, "trigger_monotonic_us", json_object_new_uint64(h->t_trigger));
	/* seconds since the trigger */
	add_usec(o, "first_flush_s", h->t_first_flush, h->t_trigger);
	add_usec(o, "flushed_s", h->t_flushed, h->t_trigger);
	add_usec(o, "removed_s", h->t_removed, h->t_trigger);
	add_usec(o, "cleanup_s", h->t_cleanup, h->t_trigger);
	add_usec(o, "ended_s", h->t_ended, h->t_trigger);
	if (h->was_watched) {
		/* on-evidence: how the wait for its dying wb went */
		json_object_object_add(o, "evidence", json_object_new_int(h->evidence));
		json_object_object_add(o, "evidence_flushes", json_object_new_int(h->flushes));
		add_usec(o, "evidence_s", h->t_evidence, h->t_trigger);
		if (h->watch_ended)
			json_object_object_add(o, "watch_ended", json_object_new_string(h->watch_ended));
	}
	json_object_object_add(o, "flushed_before_rmdir",
			       json_object_new_boolean(h->t_flushed && (!h->t_removed || h->t_flushed <= h->t_removed)));
	json_object_object_add(o, "cleanup_rerun", json_object_new_boolean(h->cleanup_done));
	if (h->verify >= 0)
		json_object_object_add(o, "dying_wb_clean", json_object_new_boolean(h->verify == 1));
	return o;
}
