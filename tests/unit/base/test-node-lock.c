/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node-lock: one wbguardd per state directory, in a temporary one. The
 * second daemon is a child process (its own open file description, as a
 * second wbguardd's would be). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "macro.h"
#include "node-lock.h"
#include "tap.h"

/* In a child: node_lock_take's result, the holder's pid and name written
 * to the pipe. */
static int take_in_child(const char *dir, pid_t *ret_pid, char *name, size_t size)
{
	int p[2], st = 0;
	pid_t c;
	struct wbg_agent got = { 0 };

	if (pipe(p) < 0)
		return -errno;
	c = fork();
	if (c == 0) {
		struct wbg_agent self, holder = { 0 };
		int fd = -1, r;

		close(p[0]);
		setenv("POD_NAME", "wbguard-x7", 1);
		setenv("POD_NAMESPACE", "kube-system", 1);
		agent_self("/proc", &self);
		r = node_lock_take(dir, &self, &fd, &holder);
		if (write(p[1], &holder, sizeof(holder)) != sizeof(holder))
			_exit(99);
		_exit(r == -EBUSY ? 1 : r == 0 ? 0 : 2);
	}
	close(p[1]);
	if (read(p[0], &got, sizeof(got)) != sizeof(got))
		got.pid = -1;
	close(p[0]);
	waitpid(c, &st, 0);
	*ret_pid = got.pid;
	snprintf(name, size, "%s", got.name);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A process that holds an OFD read lock on the lock file at path, as uid
 * (65534: any local user) or root; its pid, or -1 when it could not open
 * or lock it. It holds it until killed. */
static pid_t squat(const char *path, uid_t uid)
{
	int p[2];
	char ok = 0;
	pid_t c;

	if (pipe(p) < 0)
		return -1;
	c = fork();
	if (c == 0) {
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int fd;

		close(p[0]);
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(1);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ok = fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0;
		if (write(p[1], &ok, 1) != 1 || !ok)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &ok, 1) != 1 || !ok) {
		waitpid(c, NULL, 0);
		c = -1;
	}
	close(p[0]);
	return c;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

int main(void)
{
	char dir[] = "/tmp/wbg-test-lock.XXXXXX", name[256], path[300];
	struct wbg_agent self, holder = { 0 }, seen = { 0 }, refused = { 0 };
	pid_t pid = 0;
	int fd = -1, fd2 = -1;

	if (!mkdtemp(dir))
		return 1;
	unsetenv("POD_NAME");
	agent_self("/proc", &self);
	CHECK(self.pid == getpid() && (strncmp(self.name, "cgroup ", 7) == 0 || strncmp(self.name, "pid ", 4) == 0),
	      "outside a pod an agent is named by its cgroup (or pid)");
	CHECK(node_lock_holder(dir, &seen) == 0, "no lock file: nobody holds it");
	CHECK(node_lock_take(dir, &self, &fd, &holder) == 0 && fd >= 0, "the first daemon takes it");
	CHECK(node_lock_holder(dir, &seen) == 1 && seen.pid == getpid() && strcmp(seen.name, self.name) == 0 &&
		      seen.since_realtime_usec == self.since_realtime_usec,
	      "a reader sees the holder's pid, name and start");
	CHECK(take_in_child(dir, &pid, name, sizeof(name)) == 1 && pid == getpid() && strcmp(name, self.name) == 0,
	      "a second daemon is refused (-EBUSY), naming the first");
	CHECK(node_lock_holder(dir, &seen) == 1 && node_lock_holder(dir, &seen) == 1 && seen.pid == getpid(),
	      "reading takes nothing: still the first's");
	close(fd);
	CHECK(node_lock_holder(dir, &seen) == 0, "its end (close, or death) drops it");
	CHECK(take_in_child(dir, &pid, name, sizeof(name)) == 0, "then a new daemon takes it");
	CHECK(node_lock_holder(dir, &seen) == 0, "and its death drops it again");
	{
		/* a daemon that holds no lock (an older wbguardd) but answers
		 * on the control socket */
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control", dir);
		CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 4) == 0,
		      "a control socket that answers");
		holder = (struct wbg_agent){ 0 };
		CHECK(node_lock_take(dir, &self, &fd2, &holder) == -EBUSY && holder.pid == getpid() &&
			      strstr(holder.name, "answering on"),
		      "refused too, naming the socket's pid");
		close(l);
		CHECK(node_lock_take(dir, &self, &fd2, &holder) == 0, "a stale socket file (nobody listening) is no agent");
		unlink(sa.sun_path);
		close(fd2);
	}
	{
		struct wbg_agent other = { .pid = 4242, .since_realtime_usec = 17 };

		snprintf(other.name, sizeof(other.name), "pod kube-system/wbguard-x7");
		CHECK(node_lock_refused(dir, &refused) == -ENOENT, "no refusal noted yet");
		CHECK(node_lock_note_refused(dir, &other, &self) == 0 && node_lock_refused(dir, &refused) == 0 &&
			      refused.pid == 4242 && strcmp(refused.name, other.name) == 0 &&
			      refused.since_realtime_usec == 17,
		      "a refusal is noted, and read back (the refused one, not the holder)");
	}
	snprintf(path, sizeof(path), "%s/" WBG_NODE_LOCK_FILE, dir);
	CHECK(mode_of(path) == 0600, "the lock file is 0600 (%o): nobody else can open it to lock it", mode_of(path));
	if (geteuid() != 0)
		SKIP("a local user's read lock: needs root to be another user");
	else {
		pid_t sq = -1;
		int fd3 = -1;

		/* an older wbguardd's lock file, 0644, that a local user opened
		 * and read-locked while it was readable */
		chmod(dir, 0755);
		CHECK(chmod(path, 0644) == 0 && (sq = squat(path, 65534)) > 0,
		      "a local user read-locks an older daemon's 0644 lock file");
		holder = (struct wbg_agent){ 0 };
		CHECK(node_lock_take(dir, &self, &fd3, &holder) == 0 && fd3 >= 0,
		      "a start is not stopped by a local user's read lock (the file is replaced)");
		CHECK(mode_of(path) == 0600, "and the lock file is 0600 again (%o)", mode_of(path));
		CHECK(take_in_child(dir, &pid, name, sizeof(name)) == 1 && pid == getpid(),
		      "the replaced file is the one a second daemon is refused on");
		kill(sq, SIGKILL);
		waitpid(sq, NULL, 0);
		CHECK((sq = squat(path, 65534)) == -1, "a local user cannot open the 0600 file to lock it");
		if (sq > 0) {
			kill(sq, SIGKILL);
			waitpid(sq, NULL, 0);
		}
		close(fd3);
		/* a root process's read lock on the 0600 file (no daemon takes
		 * read locks): no claim to the node either */
		CHECK((sq = squat(path, 0)) > 0, "root read-locks the 0600 file");
		CHECK(node_lock_take(dir, &self, &fd3, &holder) == 0, "a start is not stopped by a read lock of root's either");
		kill(sq, SIGKILL);
		waitpid(sq, NULL, 0);
		close(fd3);
	}
	unlink(path);
	CHECK(symlink("/etc/passwd", path) == 0 && node_lock_take(dir, &self, &fd, &holder) == -ELOOP,
	      "a symlink for the lock file is not followed");
	unlink(path);
	snprintf(path, sizeof(path), "%s/" WBG_NODE_REFUSED_FILE, dir);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
