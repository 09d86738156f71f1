/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "http-conns.h"
#include "peer-cred.h"

struct wbg_http_conn {
	struct wbg_http_conn *next, *prev;
	int fd;         /* -1 once shut */
	uint64_t since; /* CLOCK_MONOTONIC: connected, or last answered */
	int uid_r;      /* tcp_peer_uid's answer at the connection: 0, or -ENOENT (remote) ... */
	uid_t uid;
};

static void unlink_conn(struct wbg_http_conns *t, struct wbg_http_conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		t->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		t->tail = k->prev;
	k->next = k->prev = NULL;
}

/* At the tail: deadlines are then in order from the head. */
static void append(struct wbg_http_conns *t, struct wbg_http_conn *k, uint64_t now)
{
	k->since = now;
	k->prev = t->tail;
	if (t->tail)
		t->tail->next = k;
	else
		t->head = k;
	t->tail = k;
}

struct wbg_http_conn *http_conns_open(struct wbg_http_conns *t, int fd, uint64_t now)
{
	struct wbg_http_conn *k = calloc(1, sizeof(*k));
	unsigned n = 0;

	if (!k)
		return NULL;
	k->fd = fd;
	k->uid_r = tcp_peer_uid(fd, &k->uid);
	append(t, k, now);
	/* a local user past its share: shut at once (root's, the kubelet's
	 * probes and the scraper's, are never) */
	if (k->uid_r != 0 || k->uid == 0)
		return k;
	for (struct wbg_http_conn *o = t->head; o; o = o->next) /* 64 at most */
		n += o->uid_r == 0 && o->uid == k->uid && o->fd >= 0;
	if (n > WBG_HTTP_CONNS_PER_UID) {
		uint64_t refused = atomic_fetch_add(&t->uid_refused, 1);

		if (refused % 1000 == 0)
			log_notice("Metrics connections of uid %u past its share of %d: closed (%" PRIu64 " so far)",
				   (unsigned)k->uid, WBG_HTTP_CONNS_PER_UID, refused + 1);
		(void)shutdown(k->fd, SHUT_RDWR);
		k->fd = -1;
	}
	return k;
}

void http_conns_close(struct wbg_http_conns *t, struct wbg_http_conn *k)
{
	unlink_conn(t, k);
	free(k);
}

void http_conns_answered(struct wbg_http_conns *t, struct wbg_http_conn *k, uint64_t now)
{
	unlink_conn(t, k);
	append(t, k, now);
}

void http_conns_expire(struct wbg_http_conns *t, uint64_t now)
{
	for (struct wbg_http_conn *k = t->head; k && now - k->since >= WBG_HTTP_DEADLINE_USEC; k = k->next)
		if (k->fd >= 0 && shutdown(k->fd, SHUT_RDWR) == 0) {
			atomic_fetch_add(&t->deadline_closes, 1);
			k->fd = -1; /* once */
		}
}

uint64_t http_conns_due(const struct wbg_http_conns *t)
{
	const struct wbg_http_conn *k = t->head;

	while (k && k->fd < 0) /* already shut down */
		k = k->next;
	return k ? k->since + WBG_HTTP_DEADLINE_USEC : UINT64_MAX;
}

int http_conn_peer_uid(const struct wbg_http_conn *k, uid_t *ret_uid)
{
	if (k->uid_r < 0)
		return k->uid_r;
	*ret_uid = k->uid;
	return 0;
}

void http_conns_metrics(FILE *f, const struct wbg_http_conns *t)
{
	metric_counter(f, "wbguard_http_deadline_closes_total",
		       "Connections closed for not finishing a request within 10 s (a slow client holding a slot).",
		       atomic_load(&t->deadline_closes));
	metric_counter(f, "wbguard_http_user_share_closes_total",
		       "Connections closed at once: their local user (not root) already held 8, its share of the 64 "
		       "(the probes' and the scraper's stay free).",
		       atomic_load(&t->uid_refused));
}
