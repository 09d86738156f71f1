/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /livez and /readyz on a listener of their own ([metrics] probe_listen),
 * answered by libmicrohttpd's own thread from what the event loop
 * publishes once a second (its heartbeat, and whether it is ready): a busy
 * loop, a scrape or a slow client on the metrics port delays no kubelet
 * probe. Only root's connections (the kubelet's) and our own user's are
 * answered; any other local user's is shut at once, so none can hold the
 * probe's slots. Liveness is the heartbeat's age: a loop that has not
 * beaten for stale_usec (30 s) is stuck, and /livez says so.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

struct MHD_Daemon;

#define WBG_PROBE_BEAT_USEC (1000ULL * 1000)
#define WBG_PROBE_STALE_USEC (30ULL * 1000 * 1000)

struct wbg_probe_http {
	sd_event *event;
	struct MHD_Daemon *mhd;
	sd_event_source *beat_source;
	uint64_t stale_usec;
	bool (*ready)(void *userdata);
	void *userdata;
	/* written by the loop, read by the probe thread */
	_Atomic uint64_t beat_usec; /* CLOCK_MONOTONIC of the loop's last beat */
	_Atomic bool is_ready;
	/* written by the probe thread, read by the loop's scrapes */
	_Atomic uint64_t answered, refused, stale;
};

/* listen: "host:port", or "" for none. Beats at once, then every
 * WBG_PROBE_BEAT_USEC on event. */
int probe_http_start(struct wbg_probe_http *p, sd_event *event, const char *listen, bool (*ready)(void *userdata),
		     void *userdata);
void probe_http_stop(struct wbg_probe_http *p);
/* Publishes the loop's state now (a change the next beat would say a
 * second late: ready at start). */
void probe_http_publish(struct wbg_probe_http *p);
/* The port it listens on (0: none), for a listen of port 0. */
unsigned probe_http_port(const struct wbg_probe_http *p);
/* Its metric families: probes answered, refused (another user), stale. */
void probe_http_metrics(FILE *f, const struct wbg_probe_http *p);
