/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /metrics, /livez and /readyz over HTTP, served by a thread with an
 * sd-event loop of its own (loop-thread.h): its accepts, TLS handshakes,
 * credentials' checks and slow or storming peers never hold the daemon's
 * loop. /livez and /readyz answer from the loop's heartbeat
 * (heartbeat.h); a /metrics request waits, its connection suspended, for
 * the loop's next render (scrape-feed.h). Bounded: 64 connections, 4 per
 * address, 8 per local user, a deadline per request (http-conns.h).
 * Everything below but the atomics and the feed belongs to
 * the thread once started: the loop reaches it through the calls here. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "http-conns.h"
#include "metrics-access.h"
#include "scrape-feed.h"
#include "web-config.h"

struct MHD_Daemon;
struct wbg_heartbeat;
struct wbg_loop_thread;

struct wbg_metrics_http {
	struct wbg_loop_thread *thread;
	sd_event *event; /* the thread's */
	struct MHD_Daemon *mhd;
	sd_event_source *io_source, *timer_source, *deadline_source;
	const struct wbg_heartbeat *beat;
	struct wbg_scrape_feed feed;
	_Atomic uint64_t scrapes, render_timeouts;
	struct wbg_http_conns conns;
	struct wbg_metrics_access access; /* who may GET /metrics */
	/* [metrics] web_config_file: TLS, and basic auth for /metrics */
	bool tls;
	struct wbg_web_config web;
	char listen[64];
	/* bcrypts of credentials not seen to succeed (each 100 ms or more),
	 * off both loops, a few a second per peer; the requests waiting for
	 * one or for a render */
	struct auth_checks *auth;
	struct wbg_http_auth_req *waiting;
};

/* a scrape the loop has not rendered for within this is answered 503 */
#define WBG_HTTP_RENDER_WAIT_USEC (5ULL * 1000 * 1000)

/* listen: "host:port", or "" for none; allow_users: as metrics_http_allow();
 * web: a loaded web config, taken over (emptied), or NULL for plain HTTP;
 * write(f, userdata) renders the exposition on event (the daemon's loop);
 * beat: the loop's heartbeat, started before and stopped after.
 * Who may read /metrics: metrics-access.h; /livez and /readyz answer
 * everyone, over TLS too. */
int metrics_http_start(struct wbg_metrics_http *m, sd_event *event, const char *listen, const char *allow_users,
		       struct wbg_web_config *web, void (*write)(FILE *f, void *userdata),
		       const struct wbg_heartbeat *beat, void *userdata);
/* A reload's web config (taken over): its users at once; a new certificate,
 * key or TLS floor by a new server on the same listening socket (the open
 * connections close). */
int metrics_http_set_web(struct wbg_metrics_http *m, struct wbg_web_config *web);
void metrics_http_stop(struct wbg_metrics_http *m);
/* Its metric families: scrapes, renders, refusals, closes, bcrypt checks. */
void metrics_http_metrics(FILE *f, const struct wbg_metrics_http *m);
/* users: [metrics] allow_users (names and uids; "" lets everyone read).
 * Names this system does not have are skipped, with a note. */
int metrics_http_allow(struct wbg_metrics_http *m, const char *users);
