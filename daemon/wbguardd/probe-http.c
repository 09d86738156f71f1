/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "heartbeat.h"
#include "peer-cred.h"
#include "probe-http.h"

/* Few: each answer is two atomic loads, so a slot is held only as long
 * as a client keeps an idle connection open (the timeout: 5 s). */
#define PROBE_CONNS_MAX 32

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
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status;
	bool stale = false;
	char body[128];

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return MHD_NO;
	status = heartbeat_answer(p->beat, url, body, sizeof(body), &stale);
	if (!status) {
		status = MHD_HTTP_NOT_FOUND;
		snprintf(body, sizeof(body), "not found: /livez, /readyz\n");
	}
	if (stale)
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

int probe_http_start(struct wbg_probe_http *p, const char *listen, const struct wbg_heartbeat *beat)
{
	struct sockaddr_storage ss;
	int r;

	*p = (struct wbg_probe_http){ .beat = beat };
	if (!listen[0])
		return 0;
	r = parse_listen(listen, &ss);
	if (r < 0)
		return log_error_errno(r, "Bad probe listen address '%s'", listen);
	p->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
					  (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)PROBE_CONNS_MAX,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)5, MHD_OPTION_NOTIFY_CONNECTION,
				  on_connection, p, MHD_OPTION_END);
	if (!p->mhd)
		return log_error_errno(EADDRINUSE, "Cannot serve the probes on %s", listen);
	log_info("Serving /livez and /readyz on http://%s (a thread of their own)", listen);
	return 0;
}

void probe_http_stop(struct wbg_probe_http *p)
{
	if (p->mhd)
		MHD_stop_daemon(p->mhd);
	p->mhd = NULL;
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
