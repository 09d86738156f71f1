/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "wbg-config.h"
#include "wbg-base.h"
#include "metrics-http.h"
#include "peer-cred.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A client that holds connections open cannot take them all: per address
 * at most a few, and per local user at most WBG_HTTP_CONNS_PER_UID
 * whatever addresses it uses (127.0.0.0/8 has many), so the scraper and
 * the probes always get in. */
#define WBG_HTTP_CONNS_MAX 64
#define WBG_HTTP_CONNS_PER_IP 4
#define WBG_HTTP_CONNS_PER_UID 8

/* Whether the peer's socket belongs to an allowed user. One netlink round
 * trip, only for /metrics: a scrape costs far more. */
struct wbg_http_conn {
	struct wbg_http_conn *next, *prev;
	int fd;
	uint64_t since; /* CLOCK_MONOTONIC: connected, or last answered */
	int uid_r;      /* tcp_peer_uid's answer at the connection: 0, or -ENOENT (remote) ... */
	uid_t uid;
};

/* Whether the peer's socket belongs to an allowed user: asked once, when
 * it connected. */
static bool allowed(const struct wbg_metrics_http *m, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info;
	const struct wbg_http_conn *k;

	if (!m->restrict_users)
		return true;
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	k = info ? info->socket_context : NULL;
	if (!k || k->uid_r < 0) {
		log_debug_errno(k ? k->uid_r : ENOMEM, "/metrics: cannot tell whose the peer's socket is (remote?): refused");
		return false;
	}
	for (unsigned i = 0; i < m->n_allow; i++)
		if (m->allow[i] == k->uid)
			return true;
	log_debug("/metrics: uid %u is not in [metrics] allow_users: refused", (unsigned)k->uid);
	return false;
}

int metrics_http_allow(struct wbg_metrics_http *m, const char *users)
{
	m->n_allow = 0;
	m->restrict_users = false;
	for (const char *s = users; *s;) {
		size_t n = strcspn(s, " \t");
		char word[64];

		if (n && n < sizeof(word)) {
			struct passwd *pw;
			unsigned u;

			snprintf(word, sizeof(word), "%.*s", (int)n, s);
			m->restrict_users = true;
			if (parse_uint(word, 0, UINT32_MAX - 1, &u) == 0) {
				if (m->n_allow < ELEMENTSOF(m->allow))
					m->allow[m->n_allow++] = (uid_t)u;
			} else if ((pw = getpwnam(word))) {
				if (m->n_allow < ELEMENTSOF(m->allow))
					m->allow[m->n_allow++] = pw->pw_uid;
			} else
				log_info("[metrics] allow_users: no user %s here; skipped", word);
		}
		s += n;
		s += strspn(s, " \t");
	}
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **ptr)
{
	struct wbg_metrics_http *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return MHD_NO;
	f = open_memstream(&buf, &n);
	if (!f)
		return MHD_NO;
	if (strcmp(url, "/metrics") == 0 && !allowed(m, c)) {
		m->forbidden++;
		status = MHD_HTTP_FORBIDDEN;
		fputs("forbidden: see [metrics] allow_users\n", f);
	} else if (strcmp(url, "/metrics") == 0) {
		m->scrapes++;
		m->write(f, m->userdata);
	} else if (strcmp(url, "/livez") == 0)
		fputs("ok\n", f); /* the event loop answered: alive */
	else if (strcmp(url, "/readyz") == 0) {
		/* as sd_notify READY: the watches, BPF and the verdicts are up */
		bool ready = m->ready(m->userdata);

		if (!ready)
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
		fputs(ready ? "ok\n" : "starting\n", f);
	} else if (strcmp(url, "/") == 0)
		fputs("wbguardd: see /metrics, /livez, /readyz\n", f);
	else {
		status = MHD_HTTP_NOT_FOUND;
		fputs("not found\n", f);
	}
	fclose(f);
	resp = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void rearm(struct wbg_metrics_http *m);

static uint64_t now_usec(const struct wbg_metrics_http *m)
{
	uint64_t t = 0;

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &t);
	return t;
}

static void conn_unlink(struct wbg_metrics_http *m, struct wbg_http_conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		m->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		m->conns_tail = k->prev;
	k->next = k->prev = NULL;
}

/* At the tail: deadlines are then in order from the head. */
static void conn_append(struct wbg_metrics_http *m, struct wbg_http_conn *k, uint64_t now)
{
	k->since = now;
	k->prev = m->conns_tail;
	if (m->conns_tail)
		m->conns_tail->next = k;
	else
		m->conns = k;
	m->conns_tail = k;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct wbg_metrics_http *m = cls;
	struct wbg_http_conn *k = *socket_context;
	const union MHD_ConnectionInfo *info;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = calloc(1, sizeof(*k));
		if (!k || !info) {
			free(k);
			return; /* then it has only the idle timeout */
		}
		k->fd = info->connect_fd;
		k->uid_r = tcp_peer_uid(k->fd, &k->uid);
		conn_append(m, k, now_usec(m));
		*socket_context = k;
		/* a local user past its share: shut at once (root's, the
		 * kubelet's probes and the scraper's, are never) */
		if (k->uid_r == 0 && k->uid != 0) {
			unsigned n = 0;

			for (struct wbg_http_conn *o = m->conns; o; o = o->next)
				n += o->uid_r == 0 && o->uid == k->uid && o->fd >= 0;
			if (n > WBG_HTTP_CONNS_PER_UID) {
				if (m->uid_refused++ % 1000 == 0)
					log_notice("Metrics connections of uid %u past its share of %d: closed "
						   "(%" PRIu64 " so far)", (unsigned)k->uid, WBG_HTTP_CONNS_PER_UID,
						   m->uid_refused);
				(void)shutdown(k->fd, SHUT_RDWR);
				k->fd = -1;
			}
		}
	} else if (k) {
		conn_unlink(m, k);
		free(k);
		*socket_context = NULL;
	}
}

/* An answer sent: the next request's deadline starts now. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct wbg_metrics_http *m = cls;
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct wbg_http_conn *k = info ? info->socket_context : NULL;

	if (!k)
		return;
	conn_unlink(m, k);
	conn_append(m, k, now_usec(m));
}

static int on_mhd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct wbg_metrics_http *m = userdata;

	(void)MHD_run(m->mhd);
	rearm(m);
	return 0;
}

static int on_mhd_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	return on_mhd(s, -1, 0, userdata);
}

/* Connections past their deadline are shut down; libmicrohttpd then reads
 * their end and closes them. */
static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_metrics_http *m = userdata;
	uint64_t now = now_usec(m);

	m->deadline_source = sd_event_source_disable_unref(m->deadline_source);
	for (struct wbg_http_conn *k = m->conns; k && now - k->since >= WBG_HTTP_DEADLINE_USEC; k = k->next)
		if (k->fd >= 0 && shutdown(k->fd, SHUT_RDWR) == 0) {
			m->deadline_closes++;
			k->fd = -1; /* once */
		}
	return on_mhd(s, -1, 0, userdata);
}

/* A timer only while a connection has one pending: idle means no wakeups. */
static void rearm(struct wbg_metrics_http *m)
{
	MHD_UNSIGNED_LONG_LONG ms;
	struct wbg_http_conn *k = m->conns;

	m->timer_source = sd_event_source_disable_unref(m->timer_source);
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES &&
	    sd_event_add_time_relative(m->event, &m->timer_source, CLOCK_MONOTONIC, ms * 1000, 0, on_mhd_timer,
				       m) < 0)
		log_warning("Cannot arm the metrics server's timer: idle connections close at the next request");
	while (k && k->fd < 0) /* already shut down */
		k = k->next;
	if (!k || m->deadline_source)
		return;
	if (sd_event_add_time(m->event, &m->deadline_source, CLOCK_MONOTONIC, k->since + WBG_HTTP_DEADLINE_USEC, 0,
			      on_deadline, m) < 0)
		log_warning("Cannot arm the metrics server's request deadline: only the idle timeout applies");
}

int metrics_http_start(struct wbg_metrics_http *m, sd_event *event, const char *listen, const char *allow_users,
		       void (*write)(FILE *f, void *userdata), bool (*ready)(void *userdata), void *userdata)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	int r;

	*m = (struct wbg_metrics_http){ .event = event, .write = write, .ready = ready, .userdata = userdata };
	/* with the rest of its state, never after it: a restriction set
	 * before a start that clears the struct would be lost unseen */
	(void)metrics_http_allow(m, allow_users);
	if (!listen[0])
		return 0;
	r = parse_listen(listen, &ss);
	if (r < 0)
		return log_error_errno(r, "Bad metrics listen address '%s'", listen);
	m->mhd = MHD_start_daemon(MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)WBG_HTTP_CONNS_MAX,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)WBG_HTTP_CONNS_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
				  MHD_OPTION_END);
	if (!m->mhd)
		return log_error_errno(EADDRINUSE, "Cannot serve metrics on %s", listen);
	info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info)
		return log_error_errno(EIO, "libmicrohttpd gave no epoll fd");
	r = sd_event_add_io(m->event, &m->io_source, info->epoll_fd, EPOLLIN, on_mhd, m);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the metrics listener");
	log_info("Serving metrics on http://%s/metrics", listen);
	return 0;
}

void metrics_http_stop(struct wbg_metrics_http *m)
{
	m->deadline_source = sd_event_source_disable_unref(m->deadline_source);
	m->timer_source = sd_event_source_disable_unref(m->timer_source);
	m->io_source = sd_event_source_disable_unref(m->io_source);
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
}

