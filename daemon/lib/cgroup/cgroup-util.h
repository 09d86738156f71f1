/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading and writing cgroup v2 interface files. Paths are relative to a
 * cgroupfs root passed by the caller, so tests can use a temporary tree. */
#pragma once

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>


/* root: cgroupfs mount; path: cgroup relative to it ("" is the root). */
int cg_read_keyed_u64(const char *root, const char *path, const char *file, const char *key,
		      uint64_t *ret);
/* memory.stat's file_dirty and file_writeback, from one read (each read
 * flushes the memcg's statistics). */
int cg_read_dirty(const char *root, const char *path, uint64_t *ret_dirty, uint64_t *ret_writeback);
/* The ids (inode numbers) of every cgroup under root, down to max_depth
 * levels (0: all), sorted. */
int cg_list_ids(const char *root, unsigned max_depth, uint64_t **ret, size_t *ret_n);
int cg_write(const char *root, const char *path, const char *file, const char *s);
/* Moves the calling process into the cgroup. */
int cg_enter(const char *root, const char *path);
/* Creates the cgroup (its parent must exist). */
int cg_mkdir(const char *root, const char *path);
/* 0 when the root's cgroup.subtree_control enables the memory controller
 * for the cgroups below it, -ENOENT when it does not. */
int cg_memory_delegated(const char *root);
/* rmdir, retrying while the kernel still sees the cgroup populated (EBUSY
 * for up to timeout_ms, as runc and crun do). */
int cg_rmdir(const char *root, const char *path, unsigned timeout_ms);
/* The cgroup's id: its inode number in cgroupfs, what BPF sees as kn->id. */
int cg_id(const char *root, const char *path, uint64_t *ret);
