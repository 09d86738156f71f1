/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small files whole: read bounded, written at once or atomically, and a
 * flat-keyed file's values (the kernel's interface files and our own). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Finds "key value" in a flat-keyed file's text (memory.stat, cgroup.stat,
 * cgroup.events). -ENOENT when the key is absent, -EINVAL when its value is
 * not a number. */
int keyed_file_parse_u64(const char *text, const char *key, uint64_t *ret);

/* Reads a whole small file (at most max bytes) into a NUL-terminated buffer. */
int read_small_file_at(int dirfd, const char *path, size_t max, char **ret);
/* The same from an open fd (stdin, a file opened with care); -EFBIG when it
 * holds max bytes or more; ret_len may be NULL. */
int read_small_fd(int fd, size_t max, char **ret, size_t *ret_len);
int write_string_file_at(int dirfd, const char *path, const char *s);
/* Replaces path with s whole: written to path.tmp (fsync'ed when sync),
 * then renamed, so a crash leaves the old file or the new one. */
int write_file_atomic(const char *path, const char *s, bool sync, mode_t mode);
/* The same through the temporary tmp, which must be in path's directory
 * (a reader of the directory that skips dot files needs a dot file). */
int write_file_atomic_via(const char *path, const char *tmp, const char *s, bool sync, mode_t mode);

/* Whether /proc/kallsyms (path given, for tests) lists the symbol. */
int kallsyms_has(const char *path, const char *symbol);
