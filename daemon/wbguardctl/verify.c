/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/loop.h>

#include "wbg-flush.h"
#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "wbg-base.h"
#include "verify.h"

#define NFILES 16
#define OLD_BYTES (1 << 20)  /* per file: 16 MiB in all, left dirty */
#define CHUNK (64 * 1024)

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends to the files from inside the cgroup: bytes per file, or until
 * killed when bytes is 0. */
static int writer(const char *root, const char *cg, const char *dir, size_t bytes)
{
	char buf[CHUNK], p[PATH_MAX];
	int fds[NFILES];

	if (cg_enter(root, cg) < 0)
		return 1;
	memset(buf, 'v', sizeof(buf));
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		fds[i] = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fds[i] < 0)
			return 1;
	}
	for (size_t done = 0; bytes == 0 || done < bytes; done += CHUNK)
		for (int i = 0; i < NFILES; i++)
			if (write(fds[i], buf, CHUNK) != CHUNK)
				return 1;
	return 0;
}

static pid_t spawn(const char *root, const char *cg, const char *dir, size_t bytes)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(writer(root, cg, dir, bytes));
	return pid;
}

/* Writes len bytes at off to path from inside the cgroup (buffered). */
static pid_t spawn_pwrite(const char *root, const char *cg, const char *path, off_t off, size_t len)
{
	pid_t pid = fork();

	if (pid == 0) {
		char buf[CHUNK];
		int fd;

		memset(buf, 'b', sizeof(buf));
		if (cg_enter(root, cg) < 0 || (fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			_exit(1);
		for (size_t done = 0; done < len; done += CHUNK)
			if (pwrite(fd, buf, CHUNK, off + (off_t)done) != CHUNK)
				_exit(1);
		_exit(0);
	}
	return pid;
}

static int run_to_end(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -ECHILD;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The separate bdev flush's case at small scale: cgroup a dirties a block device's own page
 * cache first (its wb owns the bdev inode), then cgroup b dirties other pages
 * of it: foreign dirtying of a bdev mapping, which the BPF counters see and
 * whose dev argument says whether the kernel took that flush's own path. The block
 * device is a loop device over a sparse file in the probe's directory,
 * detached by the kernel when its last user closes it (autoclear). */
static int bdev_probe(const struct verify_opts *o, const char *parent, const char *dir)
{
	char a[96], b[96], backing[PATH_MAX + 8], node[64];
	int ctl, n, lfd = -1, bfd = -1, r;
	struct loop_config cfg = { 0 };

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return log_info_errno(errno, "No /dev/loop-control: the bdev verdict rests on the kernel's code only");
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return log_info_errno(errno, "No free loop device: the bdev verdict rests on the kernel's code only");
	snprintf(node, sizeof(node), "/dev/loop%d", n);
	snprintf(backing, sizeof(backing), "%s/bdev", dir);
	bfd = open(backing, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (bfd < 0 || ftruncate(bfd, 16 << 20) < 0) {
		r = log_error_errno(errno, "Cannot create %s", backing);
		goto out;
	}
	lfd = open(node, O_RDWR | O_CLOEXEC);
	cfg.fd = bfd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	if (lfd < 0 || ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
		r = log_info_errno(errno, "Cannot set up %s: the bdev verdict rests on the kernel's code only", node);
		goto out;
	}
	snprintf(a, sizeof(a), "%s/bdev-a", parent);
	snprintf(b, sizeof(b), "%s/bdev-b", parent);
	r = cg_mkdir(o->cgroup_root, a);
	if (r >= 0)
		r = cg_mkdir(o->cgroup_root, b);
	if (r >= 0)
		r = run_to_end(spawn_pwrite(o->cgroup_root, a, node, 0, 1 << 20));
	if (r >= 0)
		r = run_to_end(spawn_pwrite(o->cgroup_root, b, node, 4 << 20, 1 << 20));
	if (r < 0)
		log_error_errno(r, "The bdev probe's writers failed");
	(void)cg_rmdir(o->cgroup_root, a, 5000);
	(void)cg_rmdir(o->cgroup_root, b, 5000);
out:
	if (lfd >= 0)
		close(lfd); /* last user: the kernel detaches the loop device */
	if (bfd >= 0)
		close(bfd);
	(void)unlink(backing);
	return r;
}

/* The probe needs cgroup writeback: a filesystem with it (tmpfs has none,
 * so no dying wb would ever be dirty there and the answer would be
 * "unknown" for a reason that has nothing to do with the kernel). 1: dir is
 * on one; 0: it is not (said); < 0: it cannot be looked at. */
static int disk_backed(const char *dir, bool given)
{
	char fstype[32], mi[64];
	int r = mountinfo_dir_fstype("/proc/self/mountinfo", dir, fstype, sizeof(fstype)), pid;

	/* A path into another mount namespace, as the DaemonSet's pod gives
	 * (/proc/1/root/var/tmp): that namespace's mount table says. */
	if (r >= 0 && !*fstype && sscanf(dir, "/proc/%d/root/", &pid) == 1) {
		snprintf(mi, sizeof(mi), "/proc/%d/mountinfo", pid);
		r = mountinfo_dir_fstype(mi, dir, fstype, sizeof(fstype));
	}
	if (r < 0)
		return given ? log_error_errno(r, "--dir %s", dir) : r;
	if (*fstype && fstype_has_writeback(fstype) && strcmp(fstype, "overlay") != 0)
		return 1;
	if (given)
		log_error("--dir %s is on %s, which has no cgroup writeback: give a directory on a disk-backed "
			  "filesystem (ext4, xfs, btrfs)",
			  dir, *fstype ? fstype : "a filesystem not in the mount table");
	else
		log_info("%s is on %s (no cgroup writeback); trying the next directory", dir, *fstype ? fstype : "?");
	return 0;
}

static int pick_dir(const char *given, const char **ret)
{
	static const char *const candidates[] = { "/var/tmp", "/var/lib", "/" };
	int r;

	if (given) {
		r = disk_backed(given, true);
		if (r <= 0)
			return r < 0 ? r : -EINVAL;
		*ret = given;
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(candidates); i++)
		if (disk_backed(candidates[i], false) > 0) {
			*ret = candidates[i];
			return 0;
		}
	return log_error_errno(ENOENT, "No disk-backed directory among /var/tmp, /var/lib, /: give one with --dir");
}

int verify_run(const struct verify_opts *o, struct verify_result *ret)
{
	_cleanup_(wbg_bpf_freep) struct wbg_bpf *bpf = NULL;
	struct verify_result res = { 0 };
	char parent[64], old[96], new[96], dir[PATH_MAX], p[PATH_MAX + 96];
	const char *where = "/";
	pid_t pid = -1;
	double t0 = mono();
	int r, status;

	r = pick_dir(o->dir, &where);
	if (r < 0)
		return r;
	r = cg_memory_delegated(o->cgroup_root);
	if (r < 0)
		return log_error_errno(r, "%s/cgroup.subtree_control: the memory controller is %s; the probe needs it for "
					  "its cgroups (echo +memory > %s/cgroup.subtree_control)",
				       o->cgroup_root, r == -ENOENT ? "not enabled for the cgroups below the root"
								    : "not readable",
				       o->cgroup_root);

	evidence_read_static("/proc/kallsyms", "/sys/kernel/tracing",
			     btf_struct_has_member("trace_event_raw_flush_foreign", "dev"), &res.evidence);
	r = wbg_bpf_open(WBG_BPF_WBID | WBG_BPF_PATHS, NULL, &bpf);
	if (r < 0)
		return log_error_errno(r, "verify needs BPF (fexit on cgroup_writeback_by_id)");

	snprintf(parent, sizeof(parent), "wbguard.verify-%d", (int)getpid());
	snprintf(old, sizeof(old), "%s/old", parent);
	snprintf(new, sizeof(new), "%s/new", parent);
	snprintf(dir, sizeof(dir), "%s/wbguard-verify.XXXXXX", strcmp(where, "/") == 0 ? "" : where);
	if (!mkdtemp(dir))
		return log_error_errno(errno, "Cannot create a directory in %s", where);
	r = cg_mkdir(o->cgroup_root, parent);
	if (r < 0) {
		log_error_errno(r, "Cannot create cgroup %s/%s", o->cgroup_root, parent);
		goto out_dir;
	}
	r = cg_write(o->cgroup_root, parent, "cgroup.subtree_control", "+memory");
	if (r >= 0)
		/* high, not max: the replacement's dirty pages sit on inodes of
		 * the dying wb, so its own memcg's dirty limit does not throttle
		 * it; on Debian's 6.12.95 it filled a 64M memory.max and was
		 * OOM-killed before the kernel flushed for it (verify said
		 * unknown). memory.high reclaims and slows it instead. */
		r = cg_write(o->cgroup_root, parent, "memory.high", "64M");
	if (r < 0) {
		log_error_errno(r, "Cannot set up the memory controller in %s/%s", o->cgroup_root, parent);
		goto out_cg;
	}
	for (const char *c = old; c; c = c == old ? new : NULL) {
		r = cg_mkdir(o->cgroup_root, c);
		if (r < 0) {
			log_error_errno(r, "Cannot create cgroup %s/%s", o->cgroup_root, c);
			goto out_cg;
		}
	}

	/* The old owner writes and exits with everything dirty, and goes. */
	pid = spawn(o->cgroup_root, old, dir, OLD_BYTES);
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		r = log_error_errno(EIO, "The probe's first writer failed");
		pid = -1;
		goto out_cg;
	}
	pid = -1;
	r = cg_rmdir(o->cgroup_root, old, 5000);
	if (r < 0) {
		log_error_errno(r, "Cannot remove %s", old);
		goto out_cg;
	}

	/* The replacement appends until the kernel flushes for it. */
	pid = spawn(o->cgroup_root, new, dir, 0);
	while (pid > 0 && !(o->stop && *o->stop) && mono() - t0 < o->timeout_s) {
		struct wbg_evidence e = res.evidence;

		(void)wbg_bpf_evidence(bpf, &e);
		res.evidence = e;
		/* One flush that reached the dying wb settles it; misses need
		 * company, a patched kernel has the odd one too. */
		if (e.ok_to_dying >= 1 || e.lookup_dying_found >= 1 || e.enoent_to_dying >= 8)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (WIFSIGNALED(status))
				log_warning("The probe's replacement writer was killed (signal %d) before the kernel flushed "
					    "for it; the answer may be unknown",
					    WTERMSIG(status));
			pid = -1;
			break;
		}
		usleep(100 * 1000);
	}
	res.saw_flush = res.evidence.ok_to_dying + res.evidence.enoent_to_dying > 0;
	r = o->stop && *o->stop ? -EINTR : 0;
	if (r == 0 && bdev_probe(o, parent, dir) >= 0)
		(void)wbg_bpf_evidence(bpf, &res.evidence);

out_cg:
	if (pid > 0) {
		kill(pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
	}
	(void)cg_rmdir(o->cgroup_root, new, 5000);
	(void)cg_rmdir(o->cgroup_root, old, 5000);
	(void)cg_rmdir(o->cgroup_root, parent, 5000);
out_dir:
	for (int i = 0; i < NFILES; i++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		(void)unlink(p);
	}
	(void)rmdir(dir);
	if (r < 0)
		return r;
	res.dying_wb = verdict_dying_wb(&res.evidence);
	res.bdev_flush = verdict_bdev_flush(&res.evidence);
	res.seconds = mono() - t0;
	*ret = res;
	return 0;
}
