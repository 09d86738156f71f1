/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The probes' own listener: answered within a second while the event loop
 * does not run at all (a loop busy under a storm), from what it last
 * published; a loop silent past stale_usec is reported stuck; a local
 * user other than root is shut out at once (root only: skipped else). */
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>

#include "heartbeat.h"
#include "probe-http.h"
#include "tap.h"

static bool ready_now;

static bool is_ready(void *userdata)
{
	return ready_now;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* GET path; the status line's code (0: no answer within 2 s), its body in
 * body, and how long it took in *ret_s. */
static int get(int port, const char *path, char *body, size_t size, double *ret_s)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 2 };
	double t0 = now_s();
	char buf[1024], req[128];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), code = 0;
	ssize_t n, got = 0;

	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	if (fd < 0)
		return 0;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0 && write(fd, req, strlen(req)) == (ssize_t)strlen(req))
		while (got < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += n;
	close(fd);
	buf[got] = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
		code = 0;
	snprintf(body, size, "%s", strstr(buf, "\r\n\r\n") ? strstr(buf, "\r\n\r\n") + 4 : "");
	*ret_s = now_s() - t0;
	return code;
}

/* A port nothing listens on now (the kernel's pick for port 0). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int main(void)
{
	char listen[64];
	struct wbg_probe_http p;
	struct wbg_heartbeat beat;
	sd_event *e = NULL;
	char body[256];
	double took;
	int port = 0, code;

	if (sd_event_new(&e) < 0 || heartbeat_start(&beat, e, is_ready, NULL) < 0)
		return 1;
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	CHECK(probe_http_start(&p, listen, &beat) == 0 && (port = probe_http_port(&p)) > 0,
	      "started on a port of its own (%s)", listen);
	code = get(port, "/livez", body, sizeof(body), &took);
	CHECK(code == 200 && strcmp(body, "ok\n") == 0 && took < 1,
	      "/livez while the loop does not run at all: 200 in %.3f s", took);
	code = get(port, "/readyz", body, sizeof(body), &took);
	CHECK(code == 503 && strcmp(body, "starting\n") == 0, "/readyz: not ready yet, as published (%d %s)", code,
	      body);
	ready_now = true;
	heartbeat_publish(&beat); /* as wbguardd does once ready */
	code = get(port, "/readyz", body, sizeof(body), &took);
	CHECK(code == 200 && strcmp(body, "ok\n") == 0 && took < 1, "published at once: ready, 200 in %.3f s", took);
	ready_now = false;
	(void)sd_event_run(e, 1200 * 1000); /* the next beat publishes a change too */
	code = get(port, "/readyz", body, sizeof(body), &took);
	CHECK(code == 503, "after the loop's beat: not ready again, as published (%d)", code);
	ready_now = true;
	(void)sd_event_run(e, 1200 * 1000);
	beat.stale_usec = 300 * 1000;
	usleep(400 * 1000);
	code = get(port, "/livez", body, sizeof(body), &took);
	CHECK(code == 503 && strncmp(body, "stuck", 5) == 0 && atomic_load(&p.stale) == 1,
	      "a loop silent past stale_usec: /livez 503, stuck, counted (%d %s)", code, body);
	code = get(port, "/readyz", body, sizeof(body), &took);
	CHECK(code == 503, "... and /readyz 503 (%d)", code);
	beat.stale_usec = WBG_BEAT_STALE_USEC;
	code = get(port, "/nothing", body, sizeof(body), &took);
	CHECK(code == 404, "another path: 404 (%d)", code);
	if (geteuid() != 0)
		printf("ok %d # SKIP a local user shut out: needs root\n", ++tap_n);
	else {
		pid_t c = fork();
		int st;

		if (c == 0) {
			if (setgid(65534) < 0 || setuid(65534) < 0)
				_exit(2);
			_exit(get(port, "/livez", body, sizeof(body), &took) == 0 ? 0 : 1);
		}
		CHECK(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
			      atomic_load(&p.refused) == 1,
		      "uid 65534's connection: shut, no answer, counted");
	}
	probe_http_stop(&p);
	if (geteuid() != 0 || system("command -v ip >/dev/null") != 0)
		printf("ok %d # SKIP a peer in another network namespace: needs root and ip\n", ++tap_n);
	else {
		/* a peer in a network namespace of its own, over a veth: shut */
		char cmd[1024], ns[16];
		int p2 = free_port();

		snprintf(ns, sizeof(ns), "wbgprobe%d", getpid() % 100000);
		snprintf(listen, sizeof(listen), "0.0.0.0:%d", p2);
		snprintf(cmd, sizeof(cmd),
			 "ip netns add %s && ip link add %sa type veth peer name %sb && ip link set %sb netns %s && "
			 "ip addr add 10.251.%d.1/30 dev %sa && ip link set %sa up && "
			 "ip -n %s addr add 10.251.%d.2/30 dev %sb && ip -n %s link set %sb up",
			 ns, ns, ns, ns, ns, getpid() % 250, ns, ns, ns, getpid() % 250, ns, ns, ns);
		code = system(cmd);
		CHECK(code == 0 && probe_http_start(&p, listen, &beat) == 0,
		      "a namespace %s, a veth to it; the probes on %s", ns, listen);
		snprintf(cmd, sizeof(cmd),
			 "test \"$(ip netns exec %s curl -s -o /dev/null -w %%{http_code} --max-time 3 "
			 "http://10.251.%d.1:%d/livez)\" = 000",
			 ns, getpid() % 250, p2);
		CHECK(code == 0 && system(cmd) == 0 && atomic_load(&p.refused) == 1,
		      "a peer in another network namespace: shut, no answer, counted");
		probe_http_stop(&p);
		snprintf(cmd, sizeof(cmd), "ip link del %sa 2>/dev/null; ip netns del %s 2>/dev/null", ns, ns);
		(void)system(cmd);
	}
	heartbeat_stop(&beat);
	sd_event_unref(e);
	return tap_done();
}
