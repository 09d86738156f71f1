/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Our file handles against the kernel's own (name_to_handle_at) on the
 * test machine's filesystem, and fsync by handle for real where it is ext4 or
 * xfs and we may open handles. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "flush-ops.h"
#include "wbg-base.h"
#include "tap.h"

/* A tenant's FIFO, socket and device nodes in a dirtied set: none is
 * opened (a FIFO's open would block until a writer came; a device node's
 * would run its driver), each is counted as skipped. SIGALRM ends the test
 * if an open blocks. */
static void special_files(const char *dir, int mnt, const char *fstype)
{
	static const struct {
		const char *name;
		mode_t mode;
		dev_t rdev;
	} nodes[] = {
		{ "fifo", S_IFIFO | 0666, 0 },
		{ "chr", S_IFCHR | 0600, 0 },  /* /dev/null's numbers, below */
		{ "blk", S_IFBLK | 0600, 0 },  /* loop0's */
		{ "sock", S_IFSOCK | 0666, 0 },
	};
	struct wbg_inode_key keys[ELEMENTSOF(nodes)];
	struct wbg_flush_stats s = { 0 };
	size_t n = 0;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
		union {
			struct file_handle fh;
			char buf[sizeof(struct file_handle) + 128];
		} k = { .fh.handle_bytes = 128 };
		char path[256];
		uint32_t w[2];
		struct stat st;
		dev_t rdev = S_ISCHR(nodes[i].mode) ? makedev(1, 3) : S_ISBLK(nodes[i].mode) ? makedev(7, 0) : 0;
		int mount_id;

		snprintf(path, sizeof(path), "%s/%s", dir, nodes[i].name);
		if (mknod(path, nodes[i].mode, rdev) < 0 || lstat(path, &st) < 0 ||
		    name_to_handle_at(AT_FDCWD, path, &k.fh, &mount_id, 0) < 0 || k.fh.handle_bytes < 8) {
			printf("# %s: %s\n", path, strerror(errno));
			continue;
		}
		memcpy(w, k.fh.f_handle, sizeof(w)); /* FILEID_INO32_GEN: inode, generation */
		keys[n++] = (struct wbg_inode_key){ .ino = st.st_ino, .gen = w[1] };
	}
	CHECK(n == ELEMENTSOF(nodes), "a FIFO, a character and a block device node and a socket made");
	alarm(20);
	r = flush_inodes(mnt, fstype, keys, n, FLUSH_INODE_START, &s);
	alarm(0);
	if (r == -EPERM)
		SKIP("no CAP_DAC_READ_SEARCH for open_by_handle_at: special files");
	else
		CHECK(r == 0 && s.inodes_skipped == n && s.inodes_synced == 0 && s.inodes_failed == 0 &&
			      s.inodes_gone == 0,
		      "special files skipped, none opened (skipped %llu synced %llu failed %llu gone %llu)",
		      (unsigned long long)s.inodes_skipped, (unsigned long long)s.inodes_synced,
		      (unsigned long long)s.inodes_failed, (unsigned long long)s.inodes_gone);
	for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/%s", dir, nodes[i].name);
		unlink(path);
	}
}

/* The probe in a child that first refuses one system call with EPERM
 * through a seccomp filter (nr >= 0), as the runtimes' default profiles
 * do, or drops CAP_DAC_READ_SEARCH (nr < 0). The filter does not check the
 * architecture: the child makes only native calls. Returns the probe's
 * result, or 1 if the child could not set itself up. */
static int probe_in_child(const char *path, long nr)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (nr >= 0) {
			struct sock_filter f[] = {
				BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
				BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			};
			struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
				_exit(1);
		} else {
			struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
			struct __user_cap_data_struct data[2];

			if (syscall(SYS_capget, &hdr, data) < 0)
				_exit(1);
			data[0].effective &= ~(1U << CAP_DAC_READ_SEARCH);
			if (syscall(SYS_capset, &hdr, data) < 0)
				_exit(1);
		}
		_exit(-flush_probe_handles(path));
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return 1;
	return -WEXITSTATUS(status);
}

/* The probe says what a flush will meet: open_by_handle_at allowed or
 * refused, whatever else the profile refuses. */
static void probe(void)
{
	const char *root = "/sys/fs/cgroup";

	if (geteuid() != 0 || flush_probe_handles(root) != 0) {
		SKIP("not root with CAP_DAC_READ_SEARCH: the probe's checks");
		return;
	}
	CHECK(probe_in_child(root, SYS_name_to_handle_at) == 0,
	      "probe: allowed where only name_to_handle_at is refused (RuntimeDefault with CAP_DAC_READ_SEARCH, "
	      "without CAP_SYS_ADMIN)");
	CHECK(probe_in_child(root, SYS_open_by_handle_at) == -EPERM, "probe: refused by seccomp");
	CHECK(probe_in_child(root, -1) == -EPERM, "probe: refused without CAP_DAC_READ_SEARCH");
	CHECK(probe_in_child("/nonexistent", -1) == -ENOENT, "probe: a path that does not exist is said");
}

int main(void)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + 128];
	} k, ours;
	char dir[] = "/var/tmp/wbg-flush.XXXXXX", path[128];
	const char *fstype;
	struct statfs sfs;
	struct stat st;
	int gen = 0, mnt, fd, mount_id;

	CHECK(flush_fs_has_handles("ext4") && flush_fs_has_handles("xfs") && !flush_fs_has_handles("btrfs") &&
		      !flush_fs_has_handles("tmpfs"),
	      "handle support by fs type");
	CHECK(flush_encode_handle("btrfs", 1, 1, &ours.fh, sizeof(ours)) == -EOPNOTSUPP, "btrfs: no handles");
	CHECK(flush_encode_handle("ext4", 1ULL << 33, 1, &ours.fh, sizeof(ours)) == -EOVERFLOW,
	      "ext4 inode numbers are 32-bit");
	CHECK(flush_encode_handle("xfs", 1ULL << 33, 7, &ours.fh, sizeof(ours)) == 0 && ours.fh.handle_type == 0x81 &&
		      ours.fh.handle_bytes == 12,
	      "xfs 64-bit inode: type 0x81, 12 bytes");
	CHECK(flush_bdev("/nonexistent", makedev(1, 2)) == -ENOENT, "bdev node missing: -ENOENT");
	CHECK(flush_bdev("/dev/null", makedev(1, 3)) == -ENODEV, "not a block device: -ENODEV");

	if (!mkdtemp(dir))
		return 1;
	statfs(dir, &sfs);
	fstype = sfs.f_type == 0xEF53 ? "ext4" : sfs.f_type == 0x58465342 ? "xfs" : NULL;
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (write(fd, "dirty\n", 6) != 6)
		return 1;
	fstat(fd, &st);
	if (!fstype || ioctl(fd, FS_IOC_GETVERSION, &gen) < 0) {
		printf("# %s is not ext4/xfs here: handle checks skipped\n", dir);
		SKIP("no ext4/xfs under /var/tmp: handle checks");
	} else {
		k.fh.handle_bytes = 128;
		CHECK(name_to_handle_at(AT_FDCWD, path, &k.fh, &mount_id, 0) == 0, "kernel's handle");
		CHECK(flush_encode_handle(fstype, st.st_ino, (uint32_t)gen, &ours.fh, sizeof(ours)) == 0,
		      "our handle from (ino, gen)");
		CHECK(ours.fh.handle_type == k.fh.handle_type && ours.fh.handle_bytes == k.fh.handle_bytes &&
			      memcmp(ours.fh.f_handle, k.fh.f_handle, k.fh.handle_bytes) == 0,
		      "%s: ours equals the kernel's (type %d, %u bytes)", fstype, k.fh.handle_type, k.fh.handle_bytes);
		mnt = open(dir, O_RDONLY | O_DIRECTORY);
		{
			struct wbg_inode_key keys[2] = { { .ino = st.st_ino, .gen = (uint32_t)gen },
							 { .ino = st.st_ino, .gen = (uint32_t)gen + 1 } };
			struct wbg_flush_stats s = { 0 };
			int r = flush_inodes(mnt, fstype, keys, 2, FLUSH_INODE_FSYNC, &s);

			if (r == -EPERM)
				SKIP("no CAP_DAC_READ_SEARCH for open_by_handle_at");
			else
				CHECK(r == 0 && s.inodes_synced == 1 && s.inodes_gone == 1,
				      "fsync by handle: the live inode synced, the wrong generation is gone "
				      "(synced %llu gone %llu failed %llu)",
				      (unsigned long long)s.inodes_synced, (unsigned long long)s.inodes_gone,
				      (unsigned long long)s.inodes_failed);
		}
		special_files(dir, mnt, fstype);
		CHECK(flush_syncfs(mnt, 2) == 0, "syncfs twice");
		close(mnt);
	}
	close(fd);
	unlink(path);
	rmdir(dir);
	probe();
	return tap_done();
}
