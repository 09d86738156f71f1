/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fts.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "cgroup-util.h"
#include "wbg-base.h"

int cg_memory_delegated(const char *root)
{
	_cleanup_free_ char *text = NULL;
	char p[PATH_MAX], *saveptr = NULL;
	int r;

	if ((size_t)snprintf(p, sizeof(p), "%s/cgroup.subtree_control", root) >= sizeof(p))
		return -ENAMETOOLONG;
	r = read_small_file_at(AT_FDCWD, p, 4096, &text);
	if (r < 0)
		return r;
	for (char *t = strtok_r(text, " \n", &saveptr); t; t = strtok_r(NULL, " \n", &saveptr))
		if (strcmp(t, "memory") == 0)
			return 0;
	return -ENOENT;
}

static int cg_file(const char *root, const char *path, const char *file, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s%s%s", root, path, *path ? "/" : "", file);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* A cgroup's keyed file (memory.stat, cgroup.events...), whole. */
static int cg_read_text(const char *root, const char *path, const char *file, char **ret)
{
	char p[PATH_MAX];
	int r = cg_file(root, path, file, p, sizeof(p));

	return r < 0 ? r : read_small_file_at(AT_FDCWD, p, 64 * 1024, ret);
}

int cg_read_keyed_u64(const char *root, const char *path, const char *file, const char *key,
		      uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	uint64_t v;
	int r;

	r = cg_read_text(root, path, file, &text);
	if (r < 0)
		return r;
	r = keyed_file_parse_u64(text, key, &v);
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

int cg_read_dirty(const char *root, const char *path, uint64_t *ret_dirty, uint64_t *ret_writeback)
{
	_cleanup_free_ char *text = NULL;
	uint64_t d, w;
	int r;

	r = cg_read_text(root, path, "memory.stat", &text);
	if (r < 0)
		return r;
	r = keyed_file_parse_u64(text, "file_dirty", &d);
	if (r >= 0)
		r = keyed_file_parse_u64(text, "file_writeback", &w);
	if (r < 0)
		return r;
	*ret_dirty = d;
	*ret_writeback = w;
	return 0;
}

int cg_list_ids(const char *root, unsigned max_depth, uint64_t **ret, size_t *ret_n)
{
	char *const roots[] = { (char *)root, NULL };
	uint64_t *ids = NULL;
	size_t n = 0, cap = 0;
	FTSENT *e;
	FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_XDEV | FTS_NOCHDIR, NULL);
	int r = 0;

	if (!fts)
		return -errno;
	while ((e = fts_read(fts))) {
		if (e->fts_info == FTS_NS && e->fts_level == 0) {
			r = -e->fts_errno;
			break;
		}
		if (e->fts_info != FTS_D)
			continue; /* files, and directories on their way back up */
		if (max_depth && (unsigned)e->fts_level >= max_depth)
			(void)fts_set(fts, e, FTS_SKIP); /* as deep as wbguardd tracks, no deeper */
		if (n == cap) {
			uint64_t *v = realloc(ids, (cap = cap ? cap * 2 : 256) * sizeof(*v));

			if (!v) {
				r = -ENOMEM;
				break;
			}
			ids = v;
		}
		ids[n++] = e->fts_statp->st_ino;
	}
	fts_close(fts);
	if (r < 0) {
		free(ids);
		return r;
	}
	if (n)
		qsort(ids, n, sizeof(*ids), cmp_leading_u64);
	*ret = ids;
	*ret_n = n;
	return 0;
}

int cg_write(const char *root, const char *path, const char *file, const char *s)
{
	char p[PATH_MAX];
	int r = cg_file(root, path, file, p, sizeof(p));

	return r < 0 ? r : write_string_file_at(AT_FDCWD, p, s);
}

int cg_mkdir(const char *root, const char *path)
{
	char p[PATH_MAX];
	int r = cg_file(root, path, "", p, sizeof(p));

	if (r < 0)
		return r;
	return mkdir(p, 0755) < 0 ? -errno : 0;
}

int cg_enter(const char *root, const char *path)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return cg_write(root, path, "cgroup.procs", pid);
}

int cg_rmdir(const char *root, const char *path, unsigned timeout_ms)
{
	char p[PATH_MAX];
	int r = cg_file(root, path, "", p, sizeof(p));

	if (r < 0)
		return r;
	for (unsigned waited = 0;; waited += 10) {
		if (rmdir(p) == 0)
			return 0;
		if (errno != EBUSY || waited >= timeout_ms)
			return -errno;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
}

int cg_id(const char *root, const char *path, uint64_t *ret)
{
	char p[PATH_MAX];
	struct stat st;
	int r = cg_file(root, path, "", p, sizeof(p));

	if (r < 0)
		return r;
	if (stat(p, &st) < 0)
		return -errno;
	*ret = st.st_ino;
	return 0;
}
