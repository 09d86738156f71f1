/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics server on a real loop: a local user holding every connection
 * it can (from 16 loopback addresses, 4 each: the per-address limit alone
 * lets it take all 64) cannot keep root's probe out. Off the loop: while
 * the daemon's loop does not run (a long stretch of work), /livez and
 * /readyz still answer within a second under a local user's reconnect
 * storm, scrapes wait for the loop and share one render, and a scrape the
 * loop never renders for is answered 503. Needs root (the holder is a
 * child as uid 65534); skipped otherwise. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>

#include "wbg-base.h"
#include "heartbeat.h"
#include "metrics-http.h"
#include "tap.h"
#include "run-until.h"

static void write_nothing(FILE *f, void *userdata)
{
	fputs("wbguard_x 1\n", f);
}

static bool always_ready(void *userdata)
{
	return true;
}

static int connect_from(const char *src, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, to = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, src, &a.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* A child: 4 connections from each of 127.0.0.2..17 as 65534, held until
 * killed; it writes how many it opened to the pipe *ret_fd reads. */
static pid_t hold(int port, int *ret_fd)
{
	int p[2], n = 0;
	pid_t c;

	if (pipe(p) < 0)
		return -1;
	c = fork();
	if (c == 0) {
		close(p[0]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(1);
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < 4; j++) {
				char src[32];

				snprintf(src, sizeof(src), "127.0.0.%d", i + 2);
				n += connect_from(src, port) >= 0;
			}
		(void)!write(p[1], &n, sizeof(n));
		pause();
		_exit(0);
	}
	close(p[1]);
	*ret_fd = p[0];
	return c;
}

/* A child as root: GET /readyz; exit 0 if "ok" came back within 2 s. */
static pid_t probe(int port)
{
	pid_t c = fork();

	if (c == 0) {
		char buf[512] = { 0 };
		struct timeval tv = { .tv_sec = 2 };
		int fd = connect_from("127.0.0.1", port);
		ssize_t n;

		if (fd < 0)
			_exit(2);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		dprintf(fd, "GET /readyz HTTP/1.0\r\nHost: x\r\n\r\n");
		n = read(fd, buf, sizeof(buf) - 1);
		_exit(n > 0 && strstr(buf, "200") && strstr(buf, "\r\n\r\nok") ? 0 : 3);
	}
	return c;
}

/* A child as uid 65534: from 127.0.0.2..17, 4 connections each, each
 * opened again as soon as the server shuts it, until killed. */
static pid_t storm(int port)
{
	pid_t c = fork();

	if (c == 0) {
		int fds[64];

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(1);
		for (int i = 0; i < 64; i++)
			fds[i] = -1;
		for (;;)
			for (int i = 0; i < 64; i++) {
				char src[32], b;

				if (fds[i] >= 0) {
					ssize_t n = recv(fds[i], &b, 1, MSG_DONTWAIT);

					if (n == 0 || (n < 0 && errno != EAGAIN)) {
						close(fds[i]);
						fds[i] = -1;
					}
				}
				if (fds[i] < 0) {
					snprintf(src, sizeof(src), "127.0.0.%d", i % 16 + 2);
					fds[i] = connect_from(src, port);
				}
			}
	}
	return c;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* GET path as root; the status line's code, 0 when nothing came within
 * max_s; the body in body. */
static int get_from(const char *src, int port, const char *path, double max_s, char *body, size_t size)
{
	struct timeval tv = { .tv_sec = (time_t)max_s, .tv_usec = (suseconds_t)((max_s - (time_t)max_s) * 1e6) };
	char buf[4096] = { 0 };
	size_t got = 0;
	int fd = connect_from(src, port), code = 0;
	char *b;

	if (fd < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	dprintf(fd, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	for (ssize_t n; got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0;)
		got += n;
	close(fd);
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
		return 0;
	b = strstr(buf, "\r\n\r\n");
	snprintf(body, size, "%s", b ? b + 4 : "");
	return code;
}

static int get(int port, const char *path, double max_s, char *body, size_t size)
{
	return get_from("127.0.0.1", port, path, max_s, body, size);
}

/* A child: 100 probes, /livez and /readyz in turn, each given 1 s; exits
 * with how many answered 200 "ok" within it. */
static pid_t probes(int port)
{
	pid_t c = fork();

	if (c == 0) {
		int ok = 0;

		for (int i = 0; i < 100; i++) {
			char body[64];
			double t = now_s();
			int code = get(port, i % 2 ? "/readyz" : "/livez", 1.0, body, sizeof(body));

			ok += code == 200 && strcmp(body, "ok\n") == 0 && now_s() - t < 1.0;
		}
		_exit(ok);
	}
	return c;
}

/* A child: GET /metrics from src (10 s at most); exits 0 for 200 with
 * the exposition, 3 for 503, else 4. */
static pid_t scrape(const char *src, int port)
{
	pid_t c = fork();

	if (c == 0) {
		char body[256];
		int code = get_from(src, port, "/metrics", 10.0, body, sizeof(body));

		_exit(code == 200 && strcmp(body, "wbguard_x 1\n") == 0 ? 0 : code == 503 ? 3 : 4);
	}
	return c;
}

static int exit_of(pid_t c)
{
	int st;

	if (waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The daemon's loop busy elsewhere: nothing runs it here. */
static void off_the_loop(sd_event *e, struct wbg_metrics_http *m, int port)
{
	pid_t s, c[30];
	int ok, n;
	uint64_t renders;

	s = storm(port);
	usleep(300 * 1000);
	ok = exit_of(probes(port));
	printf("# the loop not running, uid 65534 reconnecting from 16 addresses: %d of 100 probes answered "
	       "within 1 s\n", ok);
	CHECK(ok >= 99, "loop not running, a local user's reconnect storm: /livez and /readyz answer within 1 s "
			"(%d of 100)", ok);
	kill(s, SIGKILL);
	waitpid(s, NULL, 0);

	/* scrapes that asked while the loop did not run (from 10 addresses:
	 * each has 4 connections): one render for all */
	renders = atomic_load(&m->feed.renders);
	for (int i = 0; i < 30; i++) {
		char src[32];

		snprintf(src, sizeof(src), "127.0.0.%d", 20 + i / 3);
		c[i] = scrape(src, port);
	}
	sleep(1); /* they have asked; the loop has not run */
	n = 0;
	for (int i = 0; i < 30; i++)
		n += run_until(e, c[i], 5000) == 0;
	CHECK(n == 30, "30 scrapes waiting for the loop: each 200 with the exposition once it runs (%d)", n);
	CHECK(atomic_load(&m->feed.renders) - renders == 1, "and the loop rendered once for them all (%" PRIu64 ")",
	      atomic_load(&m->feed.renders) - renders);

	/* a loop that never comes back: the scrape is not left waiting */
	{
		double t = now_s();
		int r = exit_of(scrape("127.0.0.1", port));

		t = now_s() - t;
		CHECK(r == 3 && t < 8, "the loop stuck: a scrape answered 503 in %.1f s (exit %d)", t, r);
		CHECK(atomic_load(&m->render_timeouts) == 1, "... counted (%" PRIu64 ")",
		      atomic_load(&m->render_timeouts));
	}
}

int main(void)
{
	struct wbg_metrics_http m;
	struct wbg_heartbeat beat;
	sd_event *e = NULL;
	char listen[64];
	int port = 20000 + getpid() % 20000, rfd = -1, n = 0, r;
	pid_t h;

	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root (a child holds connections as uid 65534)\n");
		return 0;
	}
	log_set_max_level(-1);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	CHECK(sd_event_new(&e) >= 0 && heartbeat_start(&beat, e, always_ready, NULL) == 0 &&
		      metrics_http_start(&m, e, listen, "", NULL, write_nothing, &beat, NULL) == 0,
	      "serving on %s", listen);
	r = run_until(e, probe(port), 3000);
	CHECK(r == 0, "/readyz answers root (%d)", r);
	h = hold(port, &rfd);
	/* let it connect every one it can, the loop accepting */
	for (int t = 0; t < 300; t++)
		(void)sd_event_run(e, 10 * 1000);
	if (read(rfd, &n, sizeof(n)) != sizeof(n))
		n = -1;
	close(rfd);
	printf("# uid 65534 opened %d connections; %" PRIu64 " shut for its share\n", n, atomic_load(&m.conns.uid_refused));
	CHECK(n == 64, "uid 65534 connected 64 times from 16 addresses (%d)", n);
	CHECK(atomic_load(&m.conns.uid_refused) >= 64 - 8, "all but its share of 8 shut at once (%" PRIu64 ")",
	      atomic_load(&m.conns.uid_refused));
	r = run_until(e, probe(port), 3000);
	CHECK(r == 0, "while it holds them, /readyz still answers root (%d)", r);
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	off_the_loop(e, &m, port);
	metrics_http_stop(&m);
	heartbeat_stop(&beat);
	sd_event_unref(e);
	return tap_done();
}
