/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager owns every event source (inotify, the flush pool's eventfd,
 * mountinfo changes, timers, signals) and moves handovers along. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "blockdev.h"
#include "conf.h"
#include "containers.h"
#include "departed.h"
#include "dying.h"
#include "metrics.h"
#include "handover.h"
#include "mountinfo.h"
#include "pending.h"
#include "records.h"
#include "registry.h"
#include "scratch.h"
#include "sysctl-keeper.h"
#include "verdict.h"
#include "watch-cgroupfs.h"

#define WBG_RECORDS_MAX 1024
#define WBG_RECENT_MAX 256      /* finished handovers kept for the API */
#define WBG_CONTROL_CONNS_MAX 64
#define WBG_FLUSH_WAITERS_MAX 256

/* A finished handover, as the API reports it. */
struct wbg_recent {
	uint64_t id;
	char *path;
	const char *outcome, *reason;
	char *json; /* the record, as in handovers.jsonl */
};

/* A FlushCgroup call waiting for its handover's flush. */
struct wbg_flush_waiter {
	struct wbg_flush_waiter *next;
	struct manager *m;
	sd_bus_message *call;
	uint64_t handover_id;
	sd_event_source *timer;
};

struct wbg_bpf;
struct flush_pool;
struct nl_sock;
struct MHD_Daemon;

struct manager {
	sd_event *event;
	struct wbg_config cfg;
	char *config_path;
	char *debugfs;

	struct wbg_registry reg;
	struct wbg_departed departed;     /* removed cgroups, for their metric labels */
	sd_event_source *departed_source; /* the next departed series due to go */
	sd_event_source *verdict_source;  /* the verdicts, refreshed on a timer, never by a reader */
	struct wbg_watch watch;
	struct wbg_bpf *bpf;
	struct flush_pool *pool;
	struct wbg_mounts mounts;
	struct blockdevs bdevs;
	struct nl_sock *uevent_sock;
	sd_event_source *uevent_source;
	struct wbg_scratch scratch;
	bool mitigating;
	struct wbg_evidence evidence;
	enum wbg_verdict dying_wb, bdev_flush;
	uint64_t verdict_checked_usec;

	sd_event_source *inotify_source, *pool_source, *mountinfo_source;
	sd_bus *bus; /* system bus, NULL while there is none */
	bool bus_name_owned;
	bool ready; /* started: watches, BPF and verdicts up (sd_notify READY, /readyz) */
	/* the control API's private socket and its peer-to-peer connections */
	int control_fd;
	int log_level_override; /* --log-level, which a reload keeps; -1: the configuration's */
	sd_event_source *control_source;
	sd_bus *control_conns[WBG_CONTROL_CONNS_MAX];
	uint64_t control_refused, api_calls;
	struct wbg_containers containers;
	struct wbg_recent recent[WBG_RECENT_MAX];
	uint64_t recent_handover_next;
	struct wbg_flush_waiter *waiters;
	unsigned n_waiters;
	sd_event_source *bus_reconnect_source;
	sd_event_source *watch_retry_source; /* armed while the watch limit refused some */
	sd_event_source *rmdir_source;
	/* cgroup ids that got a handover lately: the rmdir tracepoint's report
	 * of a removal inotify already handled is no news */
	uint64_t recent_ids[1024];
	unsigned recent_next;
	int mountinfo_fd;
	uint64_t bus_backoff_usec;

	void *active; /* tsearch tree of in-flight handovers, by id */
	struct wbg_ids ids; /* handover ids, unique across restarts */
	size_t n_active;    /* handovers in m->active */
	struct wbg_records records;
	uint64_t plans_set_evicted; /* handovers planned from the mount table: BPF set maybe evicted */

	/* counters, exported later as metrics */
	uint64_t handovers[_WBG_TRIGGER_MAX][_WBG_OUTCOME_MAX];
	uint64_t cleanup_cycles, cleanup_failures, verify_dirty;
	/* Handovers whose flush is done and whose cgroup is gone, first
	 * waiting for the kernel's offline-wb cleanup to be re-run, then for
	 * their dying-wb check: one scratch cycle and one read of wb_stats
	 * serve a whole batch (both cost more the more cgroups a node has). */
	struct wbg_handover *cleanup_head, *cleanup_tail, *verify_head, *verify_tail;
	sd_event_source *cleanup_source, *verify_source;
	uint64_t cleanup_seq;
	/* [flush] mode = on-evidence: removed cgroups' dying wbs (manager-dying.c) */
	struct dying_watch dying;
	sd_event_source *dying_source;
	bool dying_stopping;
	uint64_t systemd_stop_jobs, systemd_units_removed, bus_disconnects;
	uint64_t flushed_device_bytes;
	struct wbg_hist reaction;       /* trigger -> first flush issued */
	struct wbg_hist flush_duration; /* first flush -> all targets done */

	/* per-pod dirty expiry and the boost (expiry.c) */
	struct wbg_sysctl sysctl;
	bool sysctl_ok;              /* readable at start; else no global mechanism, no boost */
	void *pods;                  /* tsearch tree of struct pod, by cgroup id */
	size_t n_pods[2];            /* by mechanism */
	sd_event_source *sysctl_check_source, *boost_source;
	uint64_t expiry_flushes, expiry_policy_errors, expiry_unsupported, boosts;

	/* the metrics endpoint (libmicrohttpd, driven by our loop) */
	struct MHD_Daemon *mhd;
	sd_event_source *mhd_io_source, *mhd_timer_source;
	uint64_t scrapes;
	uint64_t textfile_written_usec;
	struct wbg_textfile *textfile; /* its writer thread */
};

int manager_new(const char *config_path, const char *cgroup_root_override, bool no_bpf, struct manager **ret);
struct manager *manager_free(struct manager *m);
int manager_start(struct manager *m);
int manager_run(struct manager *m);
/* systemd says the unit whose cgroup is this ("/system.slice/x.service") is
 * being stopped. */
void manager_stop_hint(struct manager *m, const char *cgroup_path);
/* Re-reads the evidence the BPF counters hold, updates the verdicts and,
 * with mitigation = auto, switches the mitigation by them. */
void manager_refresh_verdict(struct manager *m);
/* The path (relative to the cgroupfs root) of a cgroup tracked now or
 * removed lately, for labels; NULL if unknown. */
const char *manager_cgroup_path(const struct manager *m, uint64_t id);
/* The control API. A cgroup is named by its path under the cgroupfs root
 * ("a/b" or "/a/b"), never a path of its own. FlushCgroup replies when the
 * cgroup's flush is done, or with outcome "pending" after timeout_usec. */
/* --log-level: wins over the configuration's, now and after reloads. */
void manager_set_log_level(struct manager *m, int level);
/* A control connection went away: its callers wait for nothing any more. */
void manager_drop_waiters(struct manager *m, sd_bus *bus);
int manager_flush_cgroup(struct manager *m, const char *path, uint64_t timeout_usec, sd_bus_message *call,
			 sd_bus_error *error);
int manager_register_container(struct manager *m, const char *id, const char *path, const char *bundle,
			       const char *const *keys, const char *const *values, size_t n, sd_bus_error *error);
int manager_reload(struct manager *m);
/* The bus objects on a connection: the system bus or a control socket's. */
int manager_bus_add_objects(struct manager *m, sd_bus *bus);
void manager_bus_request_name(struct manager *m);
int control_start(struct manager *m);
void control_stop(struct manager *m);
/* systemd queued a job for this unit (type not known yet). */
void manager_job_hint(struct manager *m, const char *unit);
/* ... and its type, once known. */
void manager_job_type(struct manager *m, const char *unit, const char *type);
