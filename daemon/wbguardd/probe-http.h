/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /livez and /readyz on a listener of their own ([metrics] probe_listen),
 * answered by libmicrohttpd's own thread from the event loop's heartbeat
 * (heartbeat.h). Only root's connections (the kubelet's) and our own
 * user's are answered; any other local user's, or a peer from another
 * network namespace, is shut at once, so none can hold the probe's slots.
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

struct MHD_Daemon;
struct wbg_heartbeat;

struct wbg_probe_http {
	struct MHD_Daemon *mhd;
	const struct wbg_heartbeat *beat;
	/* written by the probe thread, read by the loop's scrapes */
	_Atomic uint64_t answered, refused, stale;
};

/* listen: "host:port", or "" for none; beat: the loop's, started before
 * and stopped after. */
int probe_http_start(struct wbg_probe_http *p, const char *listen, const struct wbg_heartbeat *beat);
void probe_http_stop(struct wbg_probe_http *p);
/* The port it listens on (0: none), for a listen of port 0. */
unsigned probe_http_port(const struct wbg_probe_http *p);
/* Its metric families: probes answered, refused (another user), stale. */
void probe_http_metrics(FILE *f, const struct wbg_probe_http *p);
