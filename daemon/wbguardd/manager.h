/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The manager creates wbguardd's parts, wires their event sources and frees
 * them: the cgroupfs watch (its events go to the handover lifecycle, the
 * expiry and the series of removed cgroups), the BPF programs and their
 * ring, the flush pool, the host's mounts and devices, systemd, the control
 * socket, the metrics endpoint and textfile. The decisions are in the parts
 * (lifecycle.h, expiry.h...); this is the switchboard.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "wbg-config.h"
#include "wbg-runtime.h"
#include "config-watch.h"
#include "control.h"
#include "wbg-expiry.h"
#include "wbg-handover.h"
#include "host.h"
#include "heartbeat.h"
#include "metrics-http.h"
#include "probe-http.h"
#include "wbg-cgroup.h"
#include "wbg-kernel.h"
#include "wbg-metrics.h"
#include "series.h"
#include "watch-systemd.h"

struct flush_pool;
struct wbg_bpf;
struct wbg_textfile;

struct manager {
	sd_event *event;
	struct wbg_config cfg;
	char *config_path;
	char *debugfs;
	int log_level_override; /* --log-level, which a reload keeps; -1: the configuration's */
	/* the last load of the configuration, as Prometheus exports its own */
	bool reload_ok;
	uint64_t reload_success_realtime, reload_failures;
	char reload_error[320]; /* why the last reload was refused, for its caller */
	bool ready;             /* started: watches, BPF and verdicts up (sd_notify READY, /readyz) */
	bool mitigating;
	int node_lock_fd; /* one wbguardd per node (node-lock.h): held for its life */

	struct wbg_registry reg;
	struct wbg_watch watch;
	struct wbg_bpf *bpf;
	struct flush_pool *pool;
	struct wbg_host host;
	struct wbg_scratch scratch;
	struct wbg_verdicts verdicts;
	struct wbg_lifecycle lifecycle;
	struct wbg_lifecycle_host lifecycle_host; /* its flusher's and kernel's parts */
	struct wbg_records records;
	struct wbg_containers containers;
	struct runtime_index *runtime_index; /* the runtimes' states by cgroup */
	struct wbg_series series;
	struct wbg_expiry expiry;
	struct wbg_systemd systemd;
	struct wbg_control control;
	struct wbg_heartbeat beat; /* for the listeners' threads */
	struct wbg_metrics_http http;
	struct wbg_probe_http probes;
	struct wbg_config_watch config_watch;
	struct wbg_textfile *textfile;
	uint64_t textfile_written_usec;
	/* [metrics] nfd_features_file's writer (NULL: unset) and what it
	 * was last handed */
	struct wbg_textfile *nfd_writer;
	struct wbg_nfd_features nfd;
	uint64_t cleanup_seq, api_calls;
	/* how late its timers fire: what a tenant's load does to every
	 * caller the loop answers (hook calls, probes, scrapes) */
	struct wbg_hist loop_lag;
	bool bus_name_owned;
	unsigned name_retries;             /* RequestName denied: asked again */
	sd_event_source *name_retry_source;

	sd_event_source *inotify_source, *watch_retry_source, *pool_source, *ring_source;
	sd_event_source *lifecycle_source, *expiry_source, *verdict_source;
	/* NRI (manager-nri.c): the plugin, its socket's and timer's sources */
	struct wbg_nri *nri;
	int nri_fd;
	uint64_t nri_connection; /* which connection nri_io_source watches */
	sd_event_source *nri_io_source, *nri_timer_source;
};

int manager_new(const char *config_path, const char *cgroup_root_override, bool no_bpf, struct manager **ret);
struct manager *manager_free(struct manager *m);
int manager_start(struct manager *m);
int manager_run(struct manager *m);
/* A reload: the new configuration whole, or refused (manager-reload.c). */
int manager_reload(struct manager *m);
/* --log-level: wins over the configuration's, now and after reloads. */
void manager_set_log_level(struct manager *m, int level);
/* The verdicts from fresh evidence, with the mitigation following them
 * (mitigation = auto) (manager-verdict.c). */
void manager_refresh_verdict(struct manager *m);
/* sd_notify STATUS=: counts, flush mode, mitigation and verdict now. */
void manager_notify_status(const struct manager *m);
/* The stall events on while mitigating with [flush] on, once the ring is read. */
void manager_stall_events_update(struct manager *m);
/* What status says of the stall as evidence: "yes", "off: ...", "no: ...". */
const char *manager_stall_evidence(const struct manager *m);
/* Refreshed verdicts' would-be values, changing nothing (Verify). */
void manager_probe_verdict(const struct manager *m, struct wbg_verdicts *ret);
/* node-feature-discovery's labels, the verdict and guarded, to their file
 * when one changed or its expiry is due (manager-verdict.c). */
void manager_nfd_update(struct manager *m, bool guarded);

/* The control API (manager-api.c). A cgroup is named by its path under the
 * cgroupfs root ("a/b" or "/a/b"), never a path of its own. FlushCgroup
 * replies when the cgroup's flush is done, or with outcome "pending" after
 * timeout_usec. */
int manager_flush_cgroup(struct manager *m, const char *path, uint64_t timeout_usec, sd_bus_message *call,
			 sd_bus_error *error);
int manager_register_container(struct manager *m, const char *id, const char *path, const char *bundle,
			       const char *const *keys, const char *const *values, size_t n, sd_bus_error *error);
/* A container told of by source (WBG_SOURCE_*): checked once (-EINVAL,
 * -E2BIG with why filled, naming the field), registered (merged with what
 * another source said of it; logged at level), its cgroup's expiry looked
 * at. -ENOMEM. */
int manager_note_container(struct manager *m, unsigned source, int level, const char *id, const char *path,
			   const char *bundle, const char *const *keys, const char *const *values, size_t n, char *why,
			   size_t why_size);

/* NRI (manager-nri.c): the plugin connecting with [nri] enable; whether it
 * is synchronized with the runtime (every container then registered). */
int manager_nri_start(struct manager *m);
void manager_nri_stop(struct manager *m);
bool manager_nri_synced(const struct manager *m);
/* The bus objects on a connection: the system bus or a control socket's
 * (manager-bus.c). */
int manager_bus_add_objects(sd_bus *bus, void *userdata);
/* A bus connection went away: its callers wait for nothing any more. */
void manager_bus_closed(sd_bus *bus, void *userdata);
void manager_bus_connected(void *userdata, sd_bus *bus);

/* The sources' news to the parts (manager-events.c). */
extern const struct wbg_watch_ops manager_watch_ops;
extern const struct wbg_systemd_ops manager_systemd_ops;
struct wbg_ring_event;
int manager_on_ring_event(const struct wbg_ring_event *e, void *userdata);

/* Journal catalog ids (journalctl MESSAGE_ID=...): a kernel verdict that
 * changed, a configuration reload refused. */
#define WBG_MESSAGE_VERDICT "8e9f3341520546d790bc601a609a539b"
#define WBG_MESSAGE_RELOAD_REFUSED "03d6bab0f6444ea692cc7c44750170e1"

/* The loop's CLOCK_MONOTONIC now, usec (the parts' ops tables' clock);
 * inline, so that every part reads it without calling back up. */
static inline uint64_t manager_now_usec(const struct manager *m)
{
	uint64_t t = 0;

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &t);
	return t;
}

/* Per-pod expiry's world (manager-expiry.c). */
extern const struct wbg_expiry_ops manager_expiry_ops;
struct wbg_expiry_params manager_expiry_params(const struct manager *m);
/* The handover lifecycle's world (manager-lifecycle.c). */
struct wbg_lifecycle_world manager_lifecycle_world(struct manager *m);

/* The whole exposition, as a scrape sees it (exposition.c). */
void metrics_write(const struct manager *m, FILE *f);
/* The configured textfile, rewritten by its thread; force ignores the
 * throttle. It holds only what node_exporter does not serve itself: the
 * exposition without the endpoint's process_* and HTTP counters. */
void metrics_textfile_update(struct manager *m, bool force);
