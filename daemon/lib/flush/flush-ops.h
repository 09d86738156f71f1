/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback operations, each blocking: run them on worker threads only.
 *  - syncfs passes on a filesystem (reaches dying wbs: sync_inodes_sb walks
 *    bdi->wb_list, which still holds killed wbs);
 *  - fsync of single inodes opened by file handle, which writes just a
 *    removed cgroup's data. It does not leave the dying wb clean by itself:
 *    the inodes stay on its b_dirty list (I_DIRTY_PAGES / I_DIRTY_SYNC)
 *    until the flusher visits them, so a syncfs pass still follows;
 *  - write-out of a block device's own page cache (metadata of ext4 and
 *    other buffer_head filesystems), without touching file data.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/types.h>

#include "wbguard.h"

struct wbg_flush_stats {
	uint64_t inodes_synced; /* fsync'ed */
	uint64_t inodes_gone;   /* deleted since they were dirtied (ESTALE) */
	uint64_t inodes_failed;
	uint64_t inodes_skipped; /* not regular files (FIFOs, sockets, device nodes): never opened */
	uint64_t syncfs_calls;  /* syncfs(2) calls made (passes) */
};

int flush_syncfs(int mount_fd, unsigned passes);

/* Whether inodes of this filesystem type can be opened from (ino, gen). */
bool flush_fs_has_handles(const char *fstype);
/* The file handle the filesystem's export code decodes for (ino, gen). */
int flush_encode_handle(const char *fstype, uint64_t ino, uint32_t gen, struct file_handle *fh, size_t size);
/* FSYNC: fsync each inode. START: start its writeback (sync_file_range
 * SYNC_FILE_RANGE_WRITE: no waiting, no journal commit). WRITE_WAIT: write
 * its dirty pages and wait for them (sync_file_range with WAIT_BEFORE,
 * WRITE, WAIT_AFTER: the data only, no journal commit, nobody else's). */
enum flush_inode_how { FLUSH_INODE_FSYNC, FLUSH_INODE_START, FLUSH_INODE_WRITE_WAIT };
/* Only regular files are written: each inode is first opened O_PATH and
 * fstat'ed, so a tenant's FIFO cannot block us in open() and a device node
 * is never opened (no driver's open runs, no host device is flushed).
 * Returns 0 unless the filesystem refused handles at all (then the caller
 * falls back to syncfs). */
int flush_inodes(int mount_fd, const char *fstype, const struct wbg_inode_key *v, size_t n, enum flush_inode_how how,
		 struct wbg_flush_stats *st);

/* Whether this process may open files by handle at all (path: a directory
 * to open the probe's handle against). 0: yes; -EPERM: refused (no
 * CAP_DAC_READ_SEARCH, or a seccomp filter); -EOPNOTSUPP: no such call. */
int flush_probe_handles(const char *path);

/* sync_file_range(SYNC_FILE_RANGE_WRITE) on the device node, which must be
 * the block device dev (checked after opening). */
int flush_bdev(const char *node, dev_t dev);
