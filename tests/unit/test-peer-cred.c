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
		uid = 0;
		r = peer_of(AF_INET, 65534, false, &uid);
		CHECK(r == 0 && uid == 65534, "IPv4: a connection from a child as 65534 is 65534's (%d, %u)", r,
		      (unsigned)uid);
		uid = 0;
		r = peer_of(AF_INET6, 65534, false, &uid);
		if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT)
			SKIP("no IPv6 loopback here");
		else
			CHECK(r == 0 && uid == 65534, "IPv6: the same (%d, %u)", r, (unsigned)uid);
		/* kernels without inet_diag: proc's tcp tables */
		uid = 0;
		r = peer_of(AF_INET, 65534, true, &uid);
		CHECK(r == 0 && uid == 65534, "from /proc/net/tcp: the same (%d, %u)", r, (unsigned)uid);
		uid = 0;
		r = peer_of(AF_INET6, 65534, true, &uid);
		if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT)
			SKIP("no IPv6 loopback here");
		else
			CHECK(r == 0 && uid == 65534, "from /proc/net/tcp6: the same (%d, %u)", r, (unsigned)uid);
	} else
		SKIP("not root: no other user to connect as");
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0 && tcp_peer_uid(fds[0], &uid) == -EAFNOSUPPORT,
	      "not a TCP socket: -EAFNOSUPPORT");
	return tap_done();
}
