/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "file-util.h"
#include "log.h"
#include "macro.h"
#include "node-lock.h"

static uint64_t realtime_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void agent_self(const char *proc, struct wbg_agent *ret)
{
	const char *pod = getenv("POD_NAME"), *ns = getenv("POD_NAMESPACE");
	struct wbg_agent a = { .pid = getpid(), .since_realtime_usec = realtime_usec() };
	_cleanup_free_ char *cg = NULL;
	char path[4096];

	if (pod && *pod)
		snprintf(a.name, sizeof(a.name), "pod %s/%s", ns && *ns ? ns : "?", pod);
	else {
		snprintf(path, sizeof(path), "%s/self/cgroup", proc);
		/* cgroup v2's one line: "0::/system.slice/wbguard.service" */
		if (read_small_file_at(AT_FDCWD, path, 4096, &cg) >= 0 && strncmp(cg, "0::", 3) == 0)
			snprintf(a.name, sizeof(a.name), "cgroup %.*s", (int)strcspn(cg + 3, "\n"), cg + 3);
		else
			snprintf(a.name, sizeof(a.name), "pid %d", (int)a.pid);
	}
	*ret = a;
}

static void agent_format(const struct wbg_agent *a, const char *prefix, char *buf, size_t size)
{
	snprintf(buf, size, "%spid %d\n%ssince %" PRIu64 "\n%sagent %s\n", prefix, (int)a->pid, prefix,
		 a->since_realtime_usec, prefix, a->name);
}

/* The lines agent_format wrote with PREFIX; missing ones stay zero. */
static void agent_parse(const char *text, const char *prefix, struct wbg_agent *ret)
{
	struct wbg_agent a = { 0 };
	size_t pl = strlen(prefix);

	for (const char *l = text; *l; l += strcspn(l, "\n"), l += *l == '\n') {
		int n = (int)strcspn(l, "\n");
		int pid;

		if (strncmp(l, prefix, pl) != 0)
			continue;
		if (sscanf(l + pl, "pid %d", &pid) == 1)
			a.pid = pid;
		else if (sscanf(l + pl, "since %" SCNu64, &a.since_realtime_usec) == 1)
			;
		else if (strncmp(l + pl, "agent ", 6) == 0 && n > (int)pl + 6)
			snprintf(a.name, sizeof(a.name), "%.*s", n - (int)pl - 6, l + pl + 6);
	}
	*ret = a;
}

static int lock_path(const char *state_dir, char *path, size_t size)
{
	return (size_t)snprintf(path, size, "%s/" WBG_NODE_LOCK_FILE, state_dir) >= size ? -ENAMETOOLONG : 0;
}

/* 0600: an OFD read lock needs only read access, and conflicts with the
 * daemon's write lock, so a file others may read is one any local user can
 * keep every later start from taking. */
static int open_lock(const char *state_dir, int flags, int *ret_fd)
{
	char path[4096];
	int fd, r;

	r = lock_path(state_dir, path, sizeof(path));
	if (r < 0)
		return r;
	fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

static int read_holder(int fd, struct wbg_agent *ret)
{
	char buf[512];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = 0;
	agent_parse(buf, "", ret);
	return 0;
}

/* A daemon without the lock (an older one) that still answers on the
 * control socket: the pid on its end. */
static int socket_holder(const char *state_dir, struct wbg_agent *ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	_cleanup_close_ int fd = -EBADF;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control", state_dir) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* a listener answers at once (or EAGAIN: its backlog is full, still
	 * alive); a stale socket file refuses */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EAGAIN)
		return 0;
	*ret = (struct wbg_agent){ 0 };
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
		ret->pid = cred.pid;
	snprintf(ret->name, sizeof(ret->name), "the daemon answering on %s", sa.sun_path);
	return 1;
}

/* Whether a lock on fd's file is a daemon's: the file is ours and nobody
 * else may write it, so only we could have opened it for writing (a write
 * lock needs that) or written the holder text in it. */
static bool lock_file_ours(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022);
}

/* Whether fd is still the file at the lock's path: another start may have
 * replaced it between our open and our lock. */
static bool lock_file_current(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A new lock file, 0600 and locked, moved over the old one: whoever holds
 * the old inode (a reader's lock from when it was readable, a squatter's)
 * holds nothing a start opens from now on. */
static int replace_lock(const char *path, int *ret_fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char tmp[4200];
	_cleanup_close_ int fd = -EBADF;
	int r;

	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0 || rename(tmp, path) < 0) {
		r = -errno;
		(void)unlink(tmp);
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The lock at path, for us: 0 with its fd, -EBUSY with the holder (a
 * daemon's write lock), -EAGAIN when the file changed under us (again). */
static int try_take(const char *state_dir, const char *path, int *ret_fd, struct wbg_agent *ret_holder)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	r = open_lock(state_dir, O_RDWR | O_CREAT, &fd);
	if (r < 0)
		return r;
	/* an open file description's lock: across pid namespaces (the pod's
	 * and the host's), never inherited by a child, dropped at death */
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		struct flock held = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		if (errno != EAGAIN && errno != EACCES)
			return -errno;
		if (fcntl(fd, F_OFD_GETLK, &held) < 0)
			return -errno;
		if (held.l_type == F_UNLCK)
			return -EAGAIN; /* released meanwhile */
		if (held.l_type == F_WRLCK && lock_file_ours(fd)) {
			(void)read_holder(fd, ret_holder);
			return -EBUSY;
		}
		/* a read lock, or a lock on a file others could write: no
		 * daemon's claim to the node */
		log_warning("%s is held by no wbguardd (a %s lock, on a file %s): replacing it", path,
			    held.l_type == F_RDLCK ? "read" : "write", lock_file_ours(fd) ? "of ours" : "others may write");
		return replace_lock(path, ret_fd);
	}
	if (!lock_file_current(fd, path))
		return -EAGAIN;
	/* ours, but others may hold it open from when it was readable (an
	 * older wbguardd made it 0644): a new inode */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0600)
		return replace_lock(path, ret_fd);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int node_lock_take(const char *state_dir, const struct wbg_agent *self, int *ret_fd, struct wbg_agent *ret_holder)
{
	_cleanup_close_ int fd = -EBADF;
	char path[4096], text[512];
	int r = -EAGAIN;

	if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	r = lock_path(state_dir, path, sizeof(path));
	if (r < 0)
		return r;
	/* another start replacing the file between our open and our lock
	 * makes us try again; a few times is plenty */
	for (int i = 0; i < 8 && (r = try_take(state_dir, path, &fd, ret_holder)) == -EAGAIN; i++)
		;
	if (r < 0)
		return r;
	r = socket_holder(state_dir, ret_holder);
	if (r > 0)
		return -EBUSY;
	agent_format(self, "", text, sizeof(text));
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text))
		return errno ? -errno : -EIO;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int node_lock_holder(const char *state_dir, struct wbg_agent *ret)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	_cleanup_close_ int fd = -EBADF;
	int r;

	r = open_lock(state_dir, O_RDONLY, &fd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	/* GETLK takes nothing: a daemon starting meanwhile is not refused */
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	if (fl.l_type == F_UNLCK)
		return 0;
	r = read_holder(fd, ret);
	return r < 0 ? r : 1;
}

int node_lock_note_refused(const char *state_dir, const struct wbg_agent *self, const struct wbg_agent *holder)
{
	char path[4096], a[512], b[512], text[1024];

	if ((size_t)snprintf(path, sizeof(path), "%s/" WBG_NODE_REFUSED_FILE, state_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	agent_format(self, "", a, sizeof(a));
	agent_format(holder, "holder ", b, sizeof(b));
	snprintf(text, sizeof(text), "%s%s", a, b);
	return write_file_atomic(path, text, false, 0644);
}

int node_lock_refused(const char *state_dir, struct wbg_agent *ret_refused)
{
	_cleanup_free_ char *text = NULL;
	char path[4096];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/" WBG_NODE_REFUSED_FILE, state_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	r = read_small_file_at(AT_FDCWD, path, 4096, &text);
	if (r < 0)
		return r;
	agent_parse(text, "", ret_refused);
	return 0;
}
