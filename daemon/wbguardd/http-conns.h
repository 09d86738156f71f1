/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metrics server's open connections (64 at most), for two bounds a
 * peer cannot get around: a local user other than root has 8 of them
 * whatever addresses it uses (127.0.0.0/8 has many), its next one shut
 * at once, so the scraper and the probes always get in; and a request
 * must be read and answered within WBG_HTTP_DEADLINE_USEC of its
 * connection or of the last answer on it, whatever trickles in (the idle
 * timeout alone is reset by every byte). Oldest deadline first.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define WBG_HTTP_CONNS_MAX 64
#define WBG_HTTP_CONNS_PER_IP 4
#define WBG_HTTP_CONNS_PER_UID 8
#define WBG_HTTP_DEADLINE_USEC (10ULL * 1000 * 1000)

struct wbg_http_conn;

struct wbg_http_conns {
	struct wbg_http_conn *head, *tail;
	/* written by the server's thread, read by scrapes */
	_Atomic uint64_t deadline_closes, uid_refused;
};

/* A new connection on fd at now: its peer's owner looked up once (one
 * netlink round trip), and the connection shut at once when that local
 * user already has its share. NULL when out of memory (then it has only
 * the idle timeout). */
struct wbg_http_conn *http_conns_open(struct wbg_http_conns *t, int fd, uint64_t now);
void http_conns_close(struct wbg_http_conns *t, struct wbg_http_conn *k);
/* An answer sent on k: its next request's deadline starts now. */
void http_conns_answered(struct wbg_http_conns *t, struct wbg_http_conn *k, uint64_t now);
/* Shuts the connections past their deadline (counted); the server then
 * reads their end and closes them. */
void http_conns_expire(struct wbg_http_conns *t, uint64_t now);
/* The next deadline of a connection not yet shut, or UINT64_MAX. */
uint64_t http_conns_due(const struct wbg_http_conns *t);
/* The peer's owner as looked up at the connection: 0 and *ret_uid, or
 * the lookup's error (-ENOENT: remote). */
int http_conn_peer_uid(const struct wbg_http_conn *k, uid_t *ret_uid);
/* wbguard_http_deadline_closes_total, wbguard_http_user_share_closes_total */
void http_conns_metrics(FILE *f, const struct wbg_http_conns *t);
