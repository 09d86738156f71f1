/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <microhttpd.h>

#include "conf.h"
#include "log.h"
#include "macro.h"
#include "metrics-http.h"
#include "parse-util.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A client that holds connections open cannot take them all: per address
 * at most a few, so the scraper and the probes always get in. */
#define WBG_HTTP_CONNS_MAX 64
#define WBG_HTTP_CONNS_PER_IP 4

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
	if (strcmp(url, "/metrics") == 0) {
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

/* A timer only while a connection has one pending: idle means no wakeups. */
static void rearm(struct wbg_metrics_http *m)
{
	MHD_UNSIGNED_LONG_LONG ms;

	m->timer_source = sd_event_source_disable_unref(m->timer_source);
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES &&
	    sd_event_add_time_relative(m->event, &m->timer_source, CLOCK_MONOTONIC, ms * 1000, 0, on_mhd_timer,
				       m) < 0)
		log_warning("Cannot arm the metrics server's timer: idle connections close at the next request");
}

int metrics_http_start(struct wbg_metrics_http *m, sd_event *event, const char *listen,
		       void (*write)(FILE *f, void *userdata), bool (*ready)(void *userdata), void *userdata)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	int r;

	*m = (struct wbg_metrics_http){ .event = event, .write = write, .ready = ready, .userdata = userdata };
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
	m->timer_source = sd_event_source_disable_unref(m->timer_source);
	m->io_source = sd_event_source_disable_unref(m->io_source);
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
}

