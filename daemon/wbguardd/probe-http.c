/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "peer-cred.h"
#include "probe-http.h"

/* Few: each answer is two atomic loads, so a slot is held only as long
 * as a client keeps an idle connection open (the timeout: 5 s). */
#define PROBE_CONNS_MAX 32

static uint64_t mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void beat(struct wbg_probe_http *p)
{
	atomic_store(&p->is_ready, p->ready ? p->ready(p->userdata) : true);
	atomic_store(&p->beat_usec, mono_usec());
}

static int on_beat(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_probe_http *p = userdata;
	int r;

	beat(p);
	r = sd_event_source_set_time(s, usec + WBG_PROBE_BEAT_USEC);
	if (r < 0)
		return log_error_errno(r, "Cannot re-arm the probes' heartbeat");
	return 0;
}

/* The probe thread's: which peers get answers. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct wbg_probe_http *p = cls;
	const union MHD_ConnectionInfo *info;
	uid_t uid;
	int r;

	if (toe != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return;
	/* The kubelet probes the DaemonSet's hostNetwork pod (and a unit's
	 * probes run) from this network namespace as root: a peer that is
	 * not in it (-ENOENT: another node, a pod's own namespace) or a local
	 * user other than root and us is shut. A lookup that fails otherwise
	 * answers, as before there was one. No limit per address: the peers
	 * answered are root's, and one would let a local user's reconnect
	 * storm on 127.0.0.1 crowd the kubelet's probes out of theirs. */
	r = tcp_peer_uid(info->connect_fd, &uid);
	if ((r < 0 && r != -ENOENT) || (r >= 0 && (uid == 0 || uid == geteuid())))
		return;
	atomic_fetch_add(&p->refused, 1);
	(void)shutdown(info->connect_fd, SHUT_RDWR);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **ptr)
{
	struct wbg_probe_http *p = cls;
	uint64_t age = mono_usec() - atomic_load(&p->beat_usec);
	bool fresh = age < p->stale_usec;
	unsigned status = MHD_HTTP_OK;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char body[128];

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return MHD_NO;
	if (strcmp(url, "/livez") == 0) {
		if (fresh)
			snprintf(body, sizeof(body), "ok\n");
		else
			snprintf(body, sizeof(body), "stuck: the event loop last beat %" PRIu64 " s ago\n",
				 age / 1000000);
		if (!fresh)
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
	} else if (strcmp(url, "/readyz") == 0) {
		bool ready = fresh && atomic_load(&p->is_ready);

		snprintf(body, sizeof(body), "%s\n", ready ? "ok" : fresh ? "starting" : "stuck");
		if (!ready)
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
	} else {
		status = MHD_HTTP_NOT_FOUND;
		snprintf(body, sizeof(body), "not found: /livez, /readyz\n");
	}
	if (!fresh)
		atomic_fetch_add(&p->stale, 1);
	atomic_fetch_add(&p->answered, 1);
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

int probe_http_start(struct wbg_probe_http *p, sd_event *event, const char *listen, bool (*ready)(void *userdata),
		     void *userdata)
{
	struct sockaddr_storage ss;
	int r;

	*p = (struct wbg_probe_http){ .event = event, .ready = ready, .userdata = userdata,
				      .stale_usec = WBG_PROBE_STALE_USEC };
	if (!listen[0])
		return 0;
	r = parse_listen(listen, &ss);
	if (r < 0)
		return log_error_errno(r, "Bad probe listen address '%s'", listen);
	beat(p);
	r = sd_event_add_time_relative(event, &p->beat_source, CLOCK_MONOTONIC, WBG_PROBE_BEAT_USEC, 0, on_beat, p);
	if (r < 0)
		return log_error_errno(r, "Cannot arm the probes' heartbeat");
	r = sd_event_source_set_enabled(p->beat_source, SD_EVENT_ON);
	if (r < 0)
		return log_error_errno(r, "Cannot enable the probes' heartbeat");
	p->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
					  (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)PROBE_CONNS_MAX,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)5, MHD_OPTION_NOTIFY_CONNECTION,
				  on_connection, p, MHD_OPTION_END);
	if (!p->mhd) {
		p->beat_source = sd_event_source_disable_unref(p->beat_source);
		return log_error_errno(EADDRINUSE, "Cannot serve the probes on %s", listen);
	}
	log_info("Serving /livez and /readyz on http://%s (a thread of their own)", listen);
	return 0;
}

void probe_http_stop(struct wbg_probe_http *p)
{
	if (p->mhd)
		MHD_stop_daemon(p->mhd);
	p->mhd = NULL;
	p->beat_source = sd_event_source_disable_unref(p->beat_source);
}

void probe_http_publish(struct wbg_probe_http *p)
{
	if (p->mhd)
		beat(p);
}

unsigned probe_http_port(const struct wbg_probe_http *p)
{
	const union MHD_DaemonInfo *info = p->mhd ? MHD_get_daemon_info(p->mhd, MHD_DAEMON_INFO_BIND_PORT) : NULL;

	return info ? info->port : 0;
}

void probe_http_metrics(FILE *f, const struct wbg_probe_http *p)
{
	if (!p->mhd)
		return;
	metric_counter(f, "wbguard_probe_answers_total",
		       "/livez and /readyz answers of the probe listener's own thread ([metrics] probe_listen).",
		       atomic_load(&p->answered));
	metric_counter(f, "wbguard_probe_refused_total",
		       "Probe connections of a local user other than root and wbguardd's, or from another network "
		       "namespace, shut at once.",
		       atomic_load(&p->refused));
	metric_counter(f, "wbguard_probe_stale_total",
		       "Probe answers given while the event loop's heartbeat was older than 30 s (stuck).",
		       atomic_load(&p->stale));
}
