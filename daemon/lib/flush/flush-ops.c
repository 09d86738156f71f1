/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "flush-ops.h"
#include "wbg-base.h"

/* include/linux/exportfs.h: FILEID_INO32_GEN; XFS adds a 64-bit-inode flag. */
#define FILEID_INO32_GEN 1
#define XFS_FILEID_TYPE_64FLAG 0x80

int flush_syncfs(int mount_fd, unsigned passes)
{
	for (unsigned i = 0; i < passes; i++)
		if (syncfs(mount_fd) < 0)
			return -errno;
	return 0;
}

bool flush_fs_has_handles(const char *fstype)
{
	return strcmp(fstype, "ext4") == 0 || strcmp(fstype, "ext3") == 0 || strcmp(fstype, "ext2") == 0 ||
	       strcmp(fstype, "xfs") == 0;
}

int flush_encode_handle(const char *fstype, uint64_t ino, uint32_t gen, struct file_handle *fh, size_t size)
{
	uint32_t w[3];

	if (!flush_fs_has_handles(fstype))
		return -EOPNOTSUPP;
	if (ino <= UINT32_MAX) {
		w[0] = (uint32_t)ino;
		w[1] = gen;
		fh->handle_type = FILEID_INO32_GEN;
		fh->handle_bytes = 8;
	} else if (strcmp(fstype, "xfs") == 0) {
		/* struct xfs_fid64 { u64 ino; u32 gen; } packed, host order */
		memcpy(w, &ino, 8);
		w[2] = gen;
		fh->handle_type = FILEID_INO32_GEN | XFS_FILEID_TYPE_64FLAG;
		fh->handle_bytes = 12;
	} else
		return -EOVERFLOW;
	if (sizeof(*fh) + fh->handle_bytes > size)
		return -ENOBUFS;
	memcpy(fh->f_handle, w, fh->handle_bytes);
	return 0;
}

/* The inode behind a handle, opened for writing back only if it is a
 * regular file. The type of an inode never changes and the handle names
 * one inode (number and generation), so what the O_PATH open saw is what
 * the second open gets. A negative errno the caller stops at (-EOPNOTSUPP,
 * -EPERM, -EBADF: handles refused), or -ENOENT with the inode counted. */
static int open_handle_regular(int mount_fd, struct file_handle *fh, struct wbg_flush_stats *st)
{
	_cleanup_close_ int pfd = open_by_handle_at(mount_fd, fh, O_PATH | O_CLOEXEC);
	struct stat sb;
	int fd;

	if (pfd >= 0 && fstat(pfd, &sb) < 0) {
		st->inodes_failed++;
		return -ENOENT;
	}
	if (pfd >= 0 && !S_ISREG(sb.st_mode)) {
		st->inodes_skipped++;
		return -ENOENT;
	}
	fd = pfd < 0 ? -1 : open_by_handle_at(mount_fd, fh, O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK | O_NOCTTY);
	if (pfd >= 0 && fd < 0 && errno == EPERM) /* O_NOATIME on a file we do not own */
		fd = open_by_handle_at(mount_fd, fh, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0)
		return fd;
	if (errno == ESTALE || errno == ENOENT)
		st->inodes_gone++;
	else if (errno == EOPNOTSUPP || errno == EPERM || errno == EBADF)
		return -errno;
	else
		st->inodes_failed++;
	return -ENOENT;
}

int flush_inodes(int mount_fd, const char *fstype, const struct wbg_inode_key *v, size_t n, enum flush_inode_how how,
		 struct wbg_flush_stats *st)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + 16];
	} h;

	for (size_t i = 0; i < n; i++) {
		_cleanup_close_ int fd = -EBADF;
		int r = flush_encode_handle(fstype, v[i].ino, v[i].gen, &h.fh, sizeof(h));

		if (r < 0) {
			st->inodes_failed++;
			continue;
		}
		fd = open_handle_regular(mount_fd, &h.fh, st);
		if (fd == -EOPNOTSUPP || fd == -EPERM || fd == -EBADF)
			return fd; /* the filesystem or our privileges say no */
		if (fd < 0)
			continue;
		if (how == FLUSH_INODE_FSYNC ? fsync(fd) < 0
		    : sync_file_range(fd, 0, 0,
				      how == FLUSH_INODE_START ? SYNC_FILE_RANGE_WRITE
							       : SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
									 SYNC_FILE_RANGE_WAIT_AFTER) < 0)
			st->inodes_failed++;
		else
			st->inodes_synced++;
	}
	return 0;
}

int flush_probe_handles(const char *path)
{
	/* A handle that names nothing (inode 0): the kernel checks who may
	 * open by handle before it decodes one, so a refusal is EPERM and an
	 * allowed call fails to find the inode (ESTALE). No name_to_handle_at
	 * here: the flushes never call it (handles are made from BPF's inode
	 * numbers), and containerd's RuntimeDefault refuses it without
	 * CAP_SYS_ADMIN even where it allows open_by_handle_at to
	 * CAP_DAC_READ_SEARCH. */
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + 8];
	} h = { .fh = { .handle_bytes = 8, .handle_type = FILEID_INO32_GEN } };
	_cleanup_close_ int mfd = -EBADF, fd = -EBADF;

	mfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	fd = open_by_handle_at(mfd, &h.fh, O_PATH | O_CLOEXEC);
	if (fd < 0 && (errno == EPERM || errno == EACCES))
		return -EPERM;
	if (fd < 0 && errno == ENOSYS)
		return -EOPNOTSUPP;
	return 0;
}

int flush_bdev(const char *node, dev_t dev)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	if (!node || !*node)
		return -ENODEV;
	/* O_PATH would not do: sync_file_range needs a real open. Opening
	 * read-only neither claims nor locks the device. */
	fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) || st.st_rdev != dev)
		return -ENODEV;
	if (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0)
		return -errno;
	return 0;
}
