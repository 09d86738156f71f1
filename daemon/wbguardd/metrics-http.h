/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /metrics, /livez and /readyz over HTTP (libmicrohttpd without threads of
 * its own: its epoll fd is a source on our loop, so a scrape reads counters
 * with no locking). Bounded: 64 connections, 4 per address, 8 per local
 * user (root's unbounded: the probes' and the scraper's). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "web-config.h"

struct MHD_Daemon;

struct wbg_http_conn;

struct wbg_metrics_http {
	sd_event *event;
	struct MHD_Daemon *mhd;
	sd_event_source *io_source, *timer_source, *deadline_source;
	uint64_t scrapes;
	/* Open connections, oldest deadline first (a list: at most 64): a
	 * request must be read and answered within WBG_HTTP_DEADLINE_USEC of
	 * the connection or of its last answer, whatever trickles in (the
	 * idle timeout alone is reset by every byte). */
	struct wbg_http_conn *conns, *conns_tail;
	uint64_t deadline_closes;
	/* Who may GET /metrics (the cgroup paths and pod names of every
	 * tenant): the owners of the peers' sockets; none set: everyone. */
	bool restrict_users;
	unsigned n_allow;
	uid_t allow[16];
	uint64_t forbidden; /* /metrics requests refused */
	/* [metrics] web_config_file: TLS, and basic auth for /metrics */
	bool tls;
	struct wbg_web_config web;
	char listen[64];
	/* bcrypts of credentials not seen to succeed (each 100 ms or more),
	 * off the loop, a few a second per peer; the requests they hold */
	struct auth_checks *auth;
	struct wbg_http_auth_req *waiting;
	uint64_t unauthorized; /* /metrics requests answered 401 (or 429) */
	uint64_t uid_refused; /* connections shut: their local user had its share */
	/* the exposition, and whether the daemon is up (/readyz) */
	void (*write)(FILE *f, void *userdata);
	bool (*ready)(void *userdata);
	void *userdata;
};

#define WBG_HTTP_DEADLINE_USEC (10ULL * 1000 * 1000)

/* listen: "host:port", or "" for none; allow_users: as metrics_http_allow();
 * web: a loaded web config, taken over (emptied), or NULL for plain HTTP.
 *
 * With a web config, /metrics answers a request that carries credentials
 * by them alone (basic_auth_users: 200, or 401), from any peer; one without
 * credentials from a local peer whose socket a user of allow_users owns
 * (an empty allow_users then admits no one without credentials); others
 * get 401. With no basic_auth_users, allow_users alone decides, as over
 * plain HTTP. /livez and /readyz answer everyone, over TLS. */
int metrics_http_start(struct wbg_metrics_http *m, sd_event *event, const char *listen, const char *allow_users,
		       struct wbg_web_config *web, void (*write)(FILE *f, void *userdata),
		       bool (*ready)(void *userdata), void *userdata);
/* A reload's web config (taken over): its users at once; a new certificate,
 * key or TLS floor by a new server on the same listening socket (the open
 * connections close). */
int metrics_http_set_web(struct wbg_metrics_http *m, struct wbg_web_config *web);
void metrics_http_stop(struct wbg_metrics_http *m);
/* wbguard_http_auth_checks_total */
void metrics_http_auth_metrics(FILE *f, const struct wbg_metrics_http *m);
/* users: [metrics] allow_users (names and uids; "" lets everyone read).
 * Names this system does not have are skipped, with a note. */
int metrics_http_allow(struct wbg_metrics_http *m, const char *users);
