/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics server on a real loop: a local user holding every connection
 * it can (from 16 loopback addresses, 4 each: the per-address limit alone
 * lets it take all 64) cannot keep root's probe out. Needs root (the
 * holder is a child as uid 65534); skipped otherwise. */
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
#include <sys/wait.h>
#include <systemd/sd-event.h>

#include "wbg-base.h"
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

int main(void)
{
	struct wbg_metrics_http m;
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
	CHECK(sd_event_new(&e) >= 0 && metrics_http_start(&m, e, listen, "", NULL, write_nothing, always_ready, NULL) == 0,
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
	printf("# uid 65534 opened %d connections; %" PRIu64 " shut for its share\n", n, m.uid_refused);
	CHECK(n == 64, "uid 65534 connected 64 times from 16 addresses (%d)", n);
	CHECK(m.uid_refused >= 64 - 8, "all but its share of 8 shut at once (%" PRIu64 ")", m.uid_refused);
	r = run_until(e, probe(port), 3000);
	CHECK(r == 0, "while it holds them, /readyz still answers root (%d)", r);
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	metrics_http_stop(&m);
	sd_event_unref(e);
	return tap_done();
}
