/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whose is the peer's socket: loopback connections from this process and
 * from a child running as another user, asked of the kernel's sock_diag. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer-cred.h"
#include "tap.h"

static int listener(int family, struct sockaddr_storage *ss, socklen_t *len)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*len = sizeof(*a);
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)ss, *len) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)ss, len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* A connection to the listener from a child as uid (or from this process,
 * uid < 0); the accepted end's owner as tcp_peer_uid() tells it. */
static int peer_of(int family, int as_uid, bool procfs, uid_t *ret)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l = listener(family, &ss, &len), c = -1, a, r, pipefd[2];
	pid_t pid = -1;

	if (l < 0)
		return -errno;
	if (as_uid >= 0) {
		if (pipe(pipefd) < 0)
			return -errno;
		pid = fork();
		if (pid == 0) {
			char b;

			close(pipefd[1]);
			if (setgid(as_uid) < 0 || setuid(as_uid) < 0)
				_exit(1);
			c = socket(family, SOCK_STREAM, 0);
			if (c < 0 || connect(c, (struct sockaddr *)&ss, len) < 0)
				_exit(1);
			(void)read(pipefd[0], &b, 1); /* held until the parent looked */
			_exit(0);
		}
		close(pipefd[0]);
	} else {
		c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(c, (struct sockaddr *)&ss, len) < 0)
			return -errno;
	}
	a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	r = a < 0 ? -errno : procfs ? tcp_peer_uid_procfs("/proc", a, ret) : tcp_peer_uid(a, ret);
	if (pid > 0) {
		close(pipefd[1]);
		waitpid(pid, NULL, 0);
	}
	if (a >= 0)
		close(a);
	if (c >= 0)
		close(c);
	close(l);
	return r;
}

static unsigned diag_calls;

/* An inet_diag that finds nothing, as a kernel without it. */
static int diag_missing(const struct sockaddr_storage *local, const struct sockaddr_storage *peer, uid_t *ret_uid)
{
	diag_calls++;
	return -ENOENT;
}

int main(void)
{
	uid_t uid = 12345;
	int r, fds[2];

	r = peer_of(AF_INET, -1, false, &uid);
	if (r == -EPROTONOSUPPORT || r == -EIO) {
		SKIP("no NETLINK_SOCK_DIAG (inet_diag) here: %s", strerror(-r));
		return tap_done();
	}
	CHECK(r == 0 && uid == getuid(), "IPv4 loopback: our own connection is ours (%d, uid %u)", r, (unsigned)uid);
	if (getuid() == 0) {
		/* another user's connection, by sock_diag and (kernels without
		 * inet_diag) by proc's tcp tables, on IPv4 and IPv6 */
		static const struct {
			int family;
			bool procfs;
			const char *what;
		} ways[] = {
			{ AF_INET, false, "IPv4, sock_diag" },
			{ AF_INET6, false, "IPv6, sock_diag" },
			{ AF_INET, true, "IPv4, /proc/net/tcp" },
			{ AF_INET6, true, "IPv6, /proc/net/tcp6" },
		};

		for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
			uid = 0;
			r = peer_of(ways[i].family, 65534, ways[i].procfs, &uid);
			if (ways[i].family == AF_INET6 && (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT))
				SKIP("%s: no IPv6 loopback here", ways[i].what);
			else
				CHECK(r == 0 && uid == 65534, "%s: a connection from a child as 65534 is 65534's (%d, %u)",
				      ways[i].what, r, (unsigned)uid);
		}
	} else
		SKIP("not root: no other user to connect as");
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0 && tcp_peer_uid(fds[0], &uid) == -EAFNOSUPPORT,
	      "not a TCP socket: -EAFNOSUPPORT");
	/* a kernel whose inet_diag cannot load (a module missing: each
	 * request had the kernel run modprobe): asked once, then proc alone */
	tcp_peer_uid_set_diag(diag_missing);
	r = peer_of(AF_INET, -1, false, &uid);
	CHECK(r == 0 && uid == getuid() && diag_calls == 1, "inet_diag missing: proc's table answers (%d)", r);
	r = peer_of(AF_INET, -1, false, &uid);
	CHECK(r == 0 && uid == getuid() && diag_calls == 1,
	      "... and inet_diag is not asked again (%u requests)", diag_calls);
	tcp_peer_uid_set_diag(NULL);
	return tap_done();
}
