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

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "auth-checks.h"
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

static uint64_t now_usec(const struct wbg_metrics_http *m);
static void rearm(struct wbg_metrics_http *m);

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

/* A request whose credentials a bcrypt checks off the loop: its
 * connection suspended meanwhile (on m->waiting), resumed with the answer.
 * Freed by whichever ends last, the request or the check. */
struct wbg_http_auth_req {
	struct wbg_http_auth_req *next, *prev;
	struct MHD_Connection *c; /* NULL once its request ended */
	unsigned status;          /* 0 while the check runs */
	bool checking;
};

static void waiting_unlink(struct wbg_metrics_http *m, struct wbg_http_auth_req *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (m->waiting == q)
		m->waiting = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->next = q->prev = NULL;
}

/* A bcrypt check (submitted by authorize()) ended: remembered if it
 * succeeded, its connection resumed with the answer. */
static void auth_done(void *req, int result, const uint8_t digest[32], void *userdata)
{
	struct wbg_metrics_http *m = userdata;
	struct wbg_http_auth_req *q = req;

	q->checking = false;
	if (result > 0)
		web_config_remember(&m->web, digest);
	if (!q->c) {
		free(q); /* its request ended meanwhile (the server stopped) */
		return;
	}
	q->status = result > 0 ? MHD_HTTP_OK : result == 0 ? MHD_HTTP_UNAUTHORIZED : MHD_HTTP_SERVICE_UNAVAILABLE;
	waiting_unlink(m, q);
	MHD_resume_connection(q->c);
	if (m->mhd) {
		(void)MHD_run(m->mhd);
		rearm(m);
	}
}

/* Hands the check to the worker and suspends the connection: 0 (answer
 * later), or 429 when the peer had its share or the queue is full. */
static unsigned check_later(struct wbg_metrics_http *m, struct MHD_Connection *c, void **ptr, const char *user,
			    const char *pass, const char *hash, bool known)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *peer = info ? info->client_addr : NULL;
	struct wbg_http_auth_req *q;

	if (!m->auth || !auth_checks_admit(m->auth, peer, now_usec(m)))
		return MHD_HTTP_TOO_MANY_REQUESTS;
	q = calloc(1, sizeof(*q));
	if (!q || auth_checks_submit(m->auth, q, peer, user, pass, hash, known) < 0) {
		free(q);
		return MHD_HTTP_TOO_MANY_REQUESTS;
	}
	q->c = c;
	q->checking = true;
	q->next = m->waiting;
	if (m->waiting)
		m->waiting->prev = q;
	m->waiting = q;
	*ptr = q;
	MHD_suspend_connection(c);
	return 0;
}

/* /metrics's answer for this request: 200, 401, 403 or 429 (metrics-http.h
 * says how allow_users and the web config combine), or 0: a bcrypt checks
 * its credentials off the loop, the answer comes when it ends. */
static unsigned authorize(struct wbg_metrics_http *m, struct MHD_Connection *c, void **ptr)
{
	char *user, *pass = NULL;
	const char *hash = NULL;
	bool known = false;
	unsigned status;
	int r;

	if (!m->tls || !m->web.n_users)
		return allowed(m, c) ? MHD_HTTP_OK : MHD_HTTP_FORBIDDEN;
	user = MHD_basic_auth_get_username_password(c, &pass);
	if (!user)
		return m->restrict_users && allowed(m, c) ? MHD_HTTP_OK : MHD_HTTP_UNAUTHORIZED;
	r = web_config_check_user(&m->web, user, pass ?: "", &hash, &known);
	status = r > 0 ? MHD_HTTP_OK : r == 0 ? MHD_HTTP_UNAUTHORIZED : check_later(m, c, ptr, user, pass ?: "", hash, known);
	if (status == MHD_HTTP_TOO_MANY_REQUESTS)
		log_debug("/metrics: credentials of '%s' not checked: too many tries", user);
	MHD_free(user);
	if (pass) {
		explicit_bzero(pass, strlen(pass));
		MHD_free(pass);
	}
	return status;
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
	if (*ptr) /* resumed: its check has ended */
		status = ((struct wbg_http_auth_req *)*ptr)->status;
	else if (strcmp(url, "/metrics") == 0 && (status = authorize(m, c, ptr)) == 0)
		return MHD_YES; /* suspended until its bcrypt ends */
	f = open_memstream(&buf, &n);
	if (!f)
		return MHD_NO;
	if (status == MHD_HTTP_FORBIDDEN) {
		m->forbidden++;
		fputs("forbidden: see [metrics] allow_users\n", f);
	} else if (status != MHD_HTTP_OK) {
		m->unauthorized++;
		fputs(status == MHD_HTTP_UNAUTHORIZED ? "unauthorized: see [metrics] web_config_file\n"
						      : "too many tries of credentials: retry in a second\n", f);
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
	if (status == MHD_HTTP_TOO_MANY_REQUESTS)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (status == MHD_HTTP_UNAUTHORIZED)
		ret = MHD_queue_basic_auth_fail_response(c, "wbguard", resp);
	else
		ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

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
	struct wbg_http_auth_req *q = *con_cls;

	if (q) {
		waiting_unlink(m, q);
		if (q->checking)
			q->c = NULL; /* the check frees it */
		else
			free(q);
		*con_cls = NULL;
	}
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

/* A server on listen (fd: an open listening socket to take over, or -1). */
static int serve(struct wbg_metrics_http *m, int fd)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem opts[16];
	unsigned n = 0, flags = MHD_USE_EPOLL;
	int r;

#define OPT(o, v, p) opts[n++] = (struct MHD_OptionItem){ o, (intptr_t)(v), p }
	r = parse_listen(m->listen, &ss);
	if (r < 0)
		return log_error_errno(r, "Bad metrics listen address '%s'", m->listen);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (fd >= 0)
		OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
	else
		OPT(MHD_OPTION_SOCK_ADDR, 0, &ss);
	OPT(MHD_OPTION_CONNECTION_LIMIT, WBG_HTTP_CONNS_MAX, NULL);
	OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, WBG_HTTP_CONNS_PER_IP, NULL);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, 10, NULL);
	OPT(MHD_OPTION_NOTIFY_CONNECTION, on_connection, m);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, on_completed, m);
	if (m->tls) {
		/* the PEM in memory: a reload has checked it loads, and the
		 * files may be readable only by root before a drop of rights */
		flags |= MHD_USE_TLS | MHD_ALLOW_SUSPEND_RESUME;
		OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, m->web.cert_pem);
		OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, m->web.key_pem);
		OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)m->web.priorities);
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
	m->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!m->mhd)
		return log_error_errno(fd >= 0 ? EINVAL : EADDRINUSE, "Cannot serve metrics on %s", m->listen);
	info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info)
		return log_error_errno(EIO, "libmicrohttpd gave no epoll fd");
	r = sd_event_add_io(m->event, &m->io_source, info->epoll_fd, EPOLLIN, on_mhd, m);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the metrics listener");
	return 0;
}

int metrics_http_start(struct wbg_metrics_http *m, sd_event *event, const char *listen, const char *allow_users,
		       struct wbg_web_config *web, void (*write)(FILE *f, void *userdata),
		       bool (*ready)(void *userdata), void *userdata)
{
	int r;

	*m = (struct wbg_metrics_http){ .event = event, .write = write, .ready = ready, .userdata = userdata };
	/* with the rest of its state, never after it: a restriction set
	 * before a start that clears the struct would be lost unseen */
	(void)metrics_http_allow(m, allow_users);
	if (web) {
		m->tls = true;
		m->web = *web;
		*web = (struct wbg_web_config){ 0 };
	}
	if (!listen[0])
		return 0;
	snprintf(m->listen, sizeof(m->listen), "%s", listen);
	if (m->tls && !MHD_is_feature_supported(MHD_FEATURE_TLS))
		return log_error_errno(EOPNOTSUPP, "[metrics] web_config_file: this libmicrohttpd has no TLS");
	/* basic auth's bcrypts, off the loop (a reload may add users) */
	if (m->tls) {
		r = auth_checks_new(event, auth_done, m, &m->auth);
		if (r < 0)
			return log_error_errno(r, "Cannot start the metrics server's credential checks");
	}
	r = serve(m, -1);
	if (r < 0)
		return r;
	log_info("Serving metrics on %s://%s/metrics%s", m->tls ? "https" : "http", listen,
		 m->tls && m->web.n_users ? " (basic auth, or a local user of allow_users)" : "");
	return 0;
}

static void unserve(struct wbg_metrics_http *m)
{
	/* requests whose bcrypt still runs: answered 503, the server goes */
	while (m->waiting) {
		struct wbg_http_auth_req *q = m->waiting;

		q->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		waiting_unlink(m, q);
		MHD_resume_connection(q->c);
	}
	if (m->mhd && m->io_source)
		(void)MHD_run(m->mhd);
	m->deadline_source = sd_event_source_disable_unref(m->deadline_source);
	m->timer_source = sd_event_source_disable_unref(m->timer_source);
	m->io_source = sd_event_source_disable_unref(m->io_source);
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
}

/* The listening socket back from a server that may only half have started
 * (MHD_start_daemon done, its epoll fd not watched): ours again, or -1. */
static int take_listener(struct wbg_metrics_http *m)
{
	int fd = m->mhd ? MHD_quiesce_daemon(m->mhd) : -1;

	unserve(m);
	return fd;
}

int metrics_http_set_web(struct wbg_metrics_http *m, struct wbg_web_config *web)
{
	struct wbg_web_config old;
	int fd, r;

	web_config_keep_successes(web, &m->web);
	if (web_config_same_tls(&m->web, web) || !m->mhd) {
		web_config_done(&m->web);
		m->web = *web;
		*web = (struct wbg_web_config){ 0 };
		return 0;
	}
	old = m->web;
	m->web = *web;
	*web = (struct wbg_web_config){ 0 };
	/* libmicrohttpd takes its certificate once: a new server, handed
	 * the listening socket, so that the port is never closed */
	fd = MHD_quiesce_daemon(m->mhd);
	if (fd < 0) {
		web_config_done(&old);
		return log_error_errno(EIO, "Cannot take over the metrics listener for a new certificate");
	}
	unserve(m);
	r = serve(m, fd);
	if (r >= 0) {
		web_config_done(&old);
		log_info("Serving metrics on %s with the web config's new certificate", m->listen);
		return 0;
	}
	/* the new one does not serve (libmicrohttpd refused it): the old one
	 * again, on the same socket, rather than /metrics down */
	fd = m->mhd ? take_listener(m) : fd;
	web_config_done(&m->web);
	m->web = old;
	if (fd < 0 || serve(m, fd) < 0) {
		if (m->mhd)
			unserve(m); /* it closes the socket */
		else if (fd >= 0)
			close(fd);
		return log_error_errno(r, "Metrics on %s down: neither the new certificate nor the old serves",
				       m->listen);
	}
	return log_error_errno(r, "Cannot serve metrics with the web config's new certificate; the old one "
				  "still serves");
}

void metrics_http_stop(struct wbg_metrics_http *m)
{
	unserve(m);
	/* after the server: a check that ends now finds its request gone */
	m->auth = auth_checks_free(m->auth);
	web_config_done(&m->web);
}

void metrics_http_auth_metrics(FILE *f, const struct wbg_metrics_http *m)
{
	struct auth_checks_stats st = { 0 };

	if (m->auth)
		auth_checks_stats(m->auth, &st);
	metric_family(f, "wbguard_http_auth_checks_total", "counter",
		      "bcrypt checks of /metrics credentials not cached, by result: run (by a thread of their own, "
		      "off the event loop), refused_rate (the peer's address, or its pool, had its few a second: "
		      "429), refused_busy (4 already waited: 429).");
	fprintf(f, "wbguard_http_auth_checks_total{result=\"run\"} %" PRIu64 "\n", st.run);
	fprintf(f, "wbguard_http_auth_checks_total{result=\"refused_rate\"} %" PRIu64 "\n", st.refused_rate);
	fprintf(f, "wbguard_http_auth_checks_total{result=\"refused_busy\"} %" PRIu64 "\n", st.refused_busy);
}

