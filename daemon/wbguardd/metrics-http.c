/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "auth-checks.h"
#include "heartbeat.h"
#include "http-conns.h"
#include "metrics-access.h"
#include "loop-thread.h"
#include "metrics-http.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static uint64_t now_usec(const struct wbg_metrics_http *m);
static void rearm(struct wbg_metrics_http *m);
static void unserve(struct wbg_metrics_http *m);

struct allow_call {
	struct wbg_metrics_http *m;
	const char *users;
};

static int allow_on_thread(void *userdata)
{
	struct allow_call *a = userdata;

	metrics_access_set_users(&a->m->access, a->users);
	return 0;
}

int metrics_http_allow(struct wbg_metrics_http *m, const char *users)
{
	struct allow_call a = { m, users };

	return m->thread ? loop_thread_call(m->thread, allow_on_thread, &a) : allow_on_thread(&a);
}

/* A /metrics request that waits, its connection suspended (on m->waiting):
 * for a bcrypt of its credentials (checking), then for the loop's render
 * (seq, its number with the scrape feed). Resumed with status, and body
 * when 200. Freed by whichever ends last, the request or the check. */
struct wbg_http_auth_req {
	struct wbg_http_auth_req *next, *prev;
	struct MHD_Connection *c; /* NULL once its request ended */
	unsigned status;          /* 0 while it waits */
	bool checking;
	uint64_t seq, since;
	char *body;
	size_t size;
};

static void waiting_link(struct wbg_metrics_http *m, struct wbg_http_auth_req *q)
{
	q->next = m->waiting;
	if (m->waiting)
		m->waiting->prev = q;
	m->waiting = q;
}

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

/* Its wait ended: the connection resumes with status (on_request answers). */
static void resume(struct wbg_metrics_http *m, struct wbg_http_auth_req *q, unsigned status)
{
	q->status = status;
	waiting_unlink(m, q);
	MHD_resume_connection(q->c);
	if (m->mhd) {
		(void)MHD_run(m->mhd);
		rearm(m);
	}
}

/* A bcrypt check (submitted by authorize()) ended: remembered if it
 * succeeded, the render asked for; refused, its connection resumed. */
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
	if (result > 0) {
		atomic_fetch_add(&m->scrapes, 1);
		q->seq = scrape_feed_ask(&m->feed); /* and now the render */
		rearm(m); /* its wait's deadline */
		return;
	}
	resume(m, q, result == 0 ? MHD_HTTP_UNAUTHORIZED : MHD_HTTP_SERVICE_UNAVAILABLE);
}

/* The loop rendered: the scrapes it covers get their copies. */
static void on_rendered(void *userdata)
{
	struct wbg_metrics_http *m = userdata;

	for (struct wbg_http_auth_req *q = m->waiting, *next; q; q = next) {
		next = q->next;
		if (q->checking || !q->seq)
			continue;
		int r = scrape_feed_take(&m->feed, q->seq, &q->body, &q->size);
		if (r != 0)
			resume(m, q, r > 0 ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE);
	}
}

/* A /metrics request waits for the loop's render, suspended. */
static void wait_render(struct wbg_metrics_http *m, struct MHD_Connection *c, void **ptr)
{
	struct wbg_http_auth_req *q = calloc(1, sizeof(*q));

	if (!q)
		return;
	q->c = c;
	q->since = now_usec(m);
	atomic_fetch_add(&m->scrapes, 1); /* in the render it waits for */
	q->seq = scrape_feed_ask(&m->feed);
	waiting_link(m, q);
	*ptr = q;
	MHD_suspend_connection(c);
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
	q->since = now_usec(m);
	waiting_link(m, q);
	*ptr = q;
	MHD_suspend_connection(c);
	return 0;
}

/* /metrics's answer for this request: 200, 401, 403 or 429
 * (metrics-access.h decides from its facts), or 0: a bcrypt checks its
 * credentials off the loop, the answer comes when it ends. */
static unsigned authorize(struct wbg_metrics_http *m, struct MHD_Connection *c, void **ptr)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct wbg_web_config *web = m->tls && m->web.n_users ? &m->web : NULL;
	char *user = NULL, *pass = NULL;
	const char *hash = NULL;
	bool known = false;
	uid_t uid = 0;
	unsigned status;
	int peer_r;

	peer_r = info && info->socket_context ? http_conn_peer_uid(info->socket_context, &uid) : -ENOMEM;
	if (web)
		user = MHD_basic_auth_get_username_password(c, &pass);
	status = metrics_access_decide(&m->access, web, peer_r, uid, user, pass, &hash, &known);
	if (status == 0)
		status = check_later(m, c, ptr, user, pass ?: "", hash, known);
	if (status == MHD_HTTP_TOO_MANY_REQUESTS)
		log_debug("/metrics: credentials of '%s' not checked: too many tries", user);
	if (user)
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
	struct wbg_http_auth_req *q = *ptr;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;
	char *buf = NULL, probe[128];
	size_t n = 0;
	bool stale;
	FILE *f;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return MHD_NO;
	if (q && q->status == MHD_HTTP_OK) { /* resumed with the loop's render */
		resp = MHD_create_response_from_buffer(q->size, q->body, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			return MHD_NO;
		q->body = NULL;
		goto send;
	}
	if (q) /* resumed: refused, or no render */
		status = q->status;
	else if (strcmp(url, "/metrics") == 0) {
		status = authorize(m, c, ptr);
		if (status == MHD_HTTP_OK)
			wait_render(m, c, ptr);
		if (status == 0 || (status == MHD_HTTP_OK && *ptr))
			return MHD_YES; /* suspended until its bcrypt or its render ends */
		if (status == MHD_HTTP_OK)
			status = MHD_HTTP_SERVICE_UNAVAILABLE; /* out of memory */
	}
	f = open_memstream(&buf, &n);
	if (!f)
		return MHD_NO;
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		fputs("unavailable: the exposition or the credentials' check did not come\n", f);
	else if (status != MHD_HTTP_OK) {
		metrics_access_refused(&m->access, status);
		fputs(status == MHD_HTTP_FORBIDDEN      ? "forbidden: see [metrics] allow_users\n"
		      : status == MHD_HTTP_UNAUTHORIZED ? "unauthorized: see [metrics] web_config_file\n"
							: "too many tries of credentials: retry in a second\n",
		      f);
	} else if ((status = heartbeat_answer(m->beat, url, probe, sizeof(probe), &stale)))
		fputs(probe, f); /* from the loop's last beat: no wait on it */
	else if (strcmp(url, "/") == 0) {
		status = MHD_HTTP_OK;
		fputs("wbguardd: see /metrics, /livez, /readyz\n", f);
	} else {
		status = MHD_HTTP_NOT_FOUND;
		fputs("not found\n", f);
	}
	fclose(f);
	resp = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(buf);
		return MHD_NO;
	}
send:
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

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct wbg_metrics_http *m = cls;
	const union MHD_ConnectionInfo *info;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = info ? http_conns_open(&m->conns, info->connect_fd, now_usec(m)) : NULL;
	} else if (*socket_context) {
		http_conns_close(&m->conns, *socket_context);
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
		free(q->body);
		q->body = NULL;
		if (q->checking)
			q->c = NULL; /* the check frees it */
		else
			free(q);
		*con_cls = NULL;
	}
	if (k)
		http_conns_answered(&m->conns, k, now_usec(m));
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
	/* a scrape the loop has not rendered for (stuck) is answered 503 */
	for (struct wbg_http_auth_req *q = m->waiting, *next; q; q = next) {
		next = q->next;
		if (!q->checking && now - q->since >= WBG_HTTP_RENDER_WAIT_USEC) {
			if (atomic_fetch_add(&m->render_timeouts, 1) % 100 == 0)
				log_warning("A scrape waited 5 s for the event loop's render: answered 503 "
					    "(the loop is stuck or far behind)");
			resume(m, q, MHD_HTTP_SERVICE_UNAVAILABLE);
		}
	}
	http_conns_expire(&m->conns, now);
	return on_mhd(s, -1, 0, userdata);
}

/* A timer only while a connection has one pending: idle means no wakeups.
 * The deadline's: the oldest connection's, or a scrape's wait for the
 * loop's render, whichever is first. */
static void rearm(struct wbg_metrics_http *m)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t due, armed;

	m->timer_source = sd_event_source_disable_unref(m->timer_source);
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES &&
	    sd_event_add_time_relative(m->event, &m->timer_source, CLOCK_MONOTONIC, ms * 1000, 0, on_mhd_timer,
				       m) < 0)
		log_warning("Cannot arm the metrics server's timer: idle connections close at the next request");
	due = http_conns_due(&m->conns);
	for (const struct wbg_http_auth_req *q = m->waiting; q; q = q->next) /* 64 at most */
		if (!q->checking && q->since + WBG_HTTP_RENDER_WAIT_USEC < due)
			due = q->since + WBG_HTTP_RENDER_WAIT_USEC;
	if (due == UINT64_MAX)
		return;
	if (m->deadline_source) {
		if (sd_event_source_get_time(m->deadline_source, &armed) >= 0 && armed > due)
			(void)sd_event_source_set_time(m->deadline_source, due);
		return;
	}
	if (sd_event_add_time(m->event, &m->deadline_source, CLOCK_MONOTONIC, due, 0, on_deadline, m) < 0)
		log_warning("Cannot arm the metrics server's request deadline: only the idle timeout applies");
}

/* A server on listen (fd: an open listening socket to take over, or -1). */
static int serve(struct wbg_metrics_http *m, int fd)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem opts[16];
	unsigned n = 0, flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME; /* scrapes wait for a render */
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
		flags |= MHD_USE_TLS;
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

/* On the server's thread, its loop new: the render's news, the bcrypt
 * worker, the listener. */
static int thread_setup(sd_event *event, void *userdata)
{
	struct wbg_metrics_http *m = userdata;
	int r;

	m->event = event;
	r = scrape_feed_attach(&m->feed, event, on_rendered, m);
	if (r < 0)
		return log_error_errno(r, "Cannot hear of the metrics' renders");
	/* basic auth's bcrypts, off both loops (a reload may add users) */
	if (m->tls) {
		r = auth_checks_new(event, auth_done, m, &m->auth);
		if (r < 0)
			return log_error_errno(r, "Cannot start the metrics server's credential checks");
	}
	r = serve(m, -1);
	if (r < 0) {
		unserve(m);
		m->auth = auth_checks_free(m->auth);
		scrape_feed_detach(&m->feed);
	}
	return r;
}

int metrics_http_start(struct wbg_metrics_http *m, sd_event *event, const char *listen, const char *allow_users,
		       struct wbg_web_config *web, void (*write)(FILE *f, void *userdata),
		       const struct wbg_heartbeat *beat, void *userdata)
{
	int r;

	*m = (struct wbg_metrics_http){ .beat = beat };
	/* with the rest of its state, never after it: a restriction set
	 * before a start that clears the struct would be lost unseen */
	metrics_access_set_users(&m->access, allow_users);
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
	r = scrape_feed_start(&m->feed, event, write, userdata);
	if (r < 0)
		return log_error_errno(r, "Cannot set up the metrics' renders");
	r = loop_thread_start(thread_setup, m, &m->thread);
	if (r < 0) {
		scrape_feed_stop(&m->feed);
		return r;
	}
	log_info("Serving metrics on %s://%s/metrics%s (a thread of its own)", m->tls ? "https" : "http", listen,
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

struct set_web {
	struct wbg_metrics_http *m;
	struct wbg_web_config *web;
};

static int set_web(void *userdata)
{
	struct wbg_metrics_http *m = ((struct set_web *)userdata)->m;
	struct wbg_web_config *web = ((struct set_web *)userdata)->web;
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

int metrics_http_set_web(struct wbg_metrics_http *m, struct wbg_web_config *web)
{
	struct set_web a = { m, web };

	/* not serving: no thread, nobody else reads m->web */
	return m->thread ? loop_thread_call(m->thread, set_web, &a) : set_web(&a);
}

/* On the thread, its last: the server and the bcrypt worker go (the
 * waiting scrapes answered 503), then the render's news. */
static void thread_teardown(void *userdata)
{
	struct wbg_metrics_http *m = userdata;

	unserve(m);
	/* after the server: a check that ends now finds its request gone */
	m->auth = auth_checks_free(m->auth);
	scrape_feed_detach(&m->feed);
}

void metrics_http_stop(struct wbg_metrics_http *m)
{
	m->thread = loop_thread_stop(m->thread, thread_teardown, m);
	scrape_feed_stop(&m->feed);
	web_config_done(&m->web);
}

void metrics_http_metrics(FILE *f, const struct wbg_metrics_http *m)
{
	struct auth_checks_stats st = { 0 };

	metric_counter(f, "wbguard_scrapes_total", "Scrapes of this endpoint.", atomic_load(&m->scrapes));
	metric_counter(f, "wbguard_http_render_timeouts_total",
		       "Scrapes answered 503: the event loop had not rendered for them within 5 s.",
		       atomic_load(&m->render_timeouts));
	metric_counter(f, "wbguard_http_renders_total",
		       "Renders of the exposition by the event loop for scrapes (one for all that asked before it, "
		       "at most ten a second).",
		       atomic_load(&m->feed.renders));
	metrics_access_metrics(f, &m->access);
	http_conns_metrics(f, &m->conns);
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

