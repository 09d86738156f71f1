/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd over the system bus: a stop job for a unit, or its ActiveState
 * turning "deactivating", is the earliest sign that its cgroup is about to
 * be emptied and removed (systemd removes a scope's cgroup as soon as it is
 * empty). Mapped to the unit's ControlGroup, it starts the handover before
 * the processes are even gone. Without a bus, inotify alone does the job;
 * when the bus goes away it is reconnected with backoff (or, without a bus
 * socket at all, when one appears).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

struct wbg_systemd_ops {
	/* A job for a unit (its type not known yet), then its type. */
	void (*job)(void *userdata, const char *unit);
	void (*job_type)(void *userdata, const char *unit, const char *type);
	/* The unit whose cgroup is this ("/system.slice/x.service") is being
	 * stopped. */
	void (*stopping)(void *userdata, const char *cgroup_path);
	/* Connected (the API goes on this bus too), or NULL: the bus is gone. */
	void (*connected)(void *userdata, sd_bus *bus);
};

struct wbg_systemd {
	sd_event *event;
	const struct wbg_systemd_ops *ops;
	void *userdata;
	sd_bus *bus; /* NULL while there is none */
	sd_event_source *reconnect_source;
	uint64_t backoff_usec;
	uint64_t stop_jobs, units_removed, disconnects;
};

int watch_systemd_start(struct wbg_systemd *w, sd_event *event, const struct wbg_systemd_ops *ops, void *userdata);
void watch_systemd_stop(struct wbg_systemd *w);
/* Its metric families (wbguard_systemd_*, wbguard_bus_*). */
void watch_systemd_metrics(FILE *f, const struct wbg_systemd *w);
