/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who may GET /metrics (the cgroup paths and pod names of every tenant):
 * the owners of the peers' sockets in [metrics] allow_users, and with a
 * web config's basic_auth_users, whoever sends their credentials. The
 * decision is a function of the request's facts; the server gathers them
 * and carries it out (a bcrypt when the decision asks for one).
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "web-config.h"

struct wbg_metrics_access {
	/* none set: everyone */
	bool restrict_users;
	unsigned n_allow;
	uid_t allow[16];
	/* written by the server's thread, read by scrapes */
	_Atomic uint64_t forbidden, unauthorized;
};

/* users: [metrics] allow_users (names and uids; "" lets everyone read).
 * Names this system does not have are skipped, with a note. */
void metrics_access_set_users(struct wbg_metrics_access *a, const char *users);

/* The answer to a /metrics request: 200, 401 or 403; or 0 when a bcrypt
 * must check the credentials (*ret_hash, *ret_known for
 * auth_checks_submit). peer_r, peer_uid: the socket's owner as looked up
 * (peer_r < 0: unknown or remote); web: the web config when it has
 * basic_auth_users, else NULL; user, pass: the request's credentials
 * (user NULL: none).
 *
 * With basic_auth_users, a request that carries credentials is judged by
 * them alone, from any peer; one without them is let in from a local peer
 * whose socket a user of allow_users owns (an empty allow_users then
 * admits no one without credentials); others get 401. Without, allow_users
 * alone decides. */
unsigned metrics_access_decide(const struct wbg_metrics_access *a, struct wbg_web_config *web, int peer_r,
			       uid_t peer_uid, const char *user, const char *pass, const char **ret_hash,
			       bool *ret_known);
/* A refusal sent (403, 401 or 429): counted. */
void metrics_access_refused(struct wbg_metrics_access *a, unsigned status);
/* wbguard_http_forbidden_total, wbguard_http_unauthorized_total */
void metrics_access_metrics(FILE *f, const struct wbg_metrics_access *a);
