/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "wbg-cgroup.h"
#include "wbg-base.h"
#include "scratch.h"

/* Our own cgroup v2 path, from /proc/self/cgroup ("0::/path"). */
static int own_cgroup(char **ret)
{
	_cleanup_free_ char *text = NULL;
	char *p, *nl;
	int r = read_small_file_at(AT_FDCWD, "/proc/self/cgroup", 64 * 1024, &text);

	if (r < 0)
		return r;
	p = strstr(text, "0::/");
	if (!p)
		return -ENOENT;
	p += 4;
	nl = strchr(p, '\n');
	if (nl)
		*nl = 0;
	*ret = strdup(p);
	return *ret ? 0 : -ENOMEM;
}

/* systemd marks cgroups it delegated with the user.delegate xattr (252+)
 * and trusted.delegate, which only CAP_SYS_ADMIN may read: the unit runs
 * without it, so user.delegate is asked first. We may then create
 * children, but (no internal processes) must first move ourselves into a
 * leaf. */
static bool delegated(const char *path)
{
	char v[8] = "";

	return (getxattr(path, "user.delegate", v, sizeof(v) - 1) > 0 && v[0] == '1') ||
	       (getxattr(path, "trusted.delegate", v, sizeof(v) - 1) > 0 && v[0] == '1');
}

static int pick_delegated(const char *root, char **ret)
{
	_cleanup_free_ char *own = NULL;
	char p[PATH_MAX];
	int r;

	r = own_cgroup(&own);
	if (r < 0 || !*own)
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/%s", root, own);
	if (!delegated(p))
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/%s/wbguardd", root, own);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(p, sizeof(p), "%s/wbguardd", own);
	r = cg_enter(root, p);
	if (r < 0)
		return r;
	r = cg_write(root, own, "cgroup.subtree_control", "+memory");
	if (r < 0)
		return r;
	snprintf(p, sizeof(p), "%s/scratch", own);
	*ret = strdup(p);
	return *ret ? 0 : -ENOMEM;
}

/* Children left by a run that was killed. */
static void remove_children(const char *root, const char *path)
{
	_cleanup_closedir_ DIR *d = NULL;
	char p[PATH_MAX];
	struct dirent *de;

	snprintf(p, sizeof(p), "%s/%s", root, path);
	d = opendir(p);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && strncmp(de->d_name, "cycle-", 6) == 0) {
			snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
			(void)cg_rmdir(root, p, 1000);
		}
}

int scratch_open(const char *root, const char *path, const char *parent, struct wbg_scratch *ret)
{
	_cleanup_free_ char *picked = NULL;
	char p[PATH_MAX];
	struct wbg_scratch s = { 0 };
	int r;

	if (!path || !*path) {
		r = pick_delegated(root, &picked);
		if (r < 0 && parent && *parent) {
			if (asprintf(&picked, "%s/wbguard.scratch", parent) < 0)
				picked = NULL;
		} else if (r < 0)
			picked = strdup("wbguard.scratch");
		if (!picked)
			return -ENOMEM;
		path = picked;
	}
	snprintf(p, sizeof(p), "%s/%s", root, path);
	if (mkdir(p, 0755) == 0)
		s.created = 1;
	else if (errno != EEXIST)
		return log_error_errno(errno, "Cannot create scratch cgroup %s", p);
	remove_children(root, path);
	r = cg_write(root, path, "cgroup.subtree_control", "+memory");
	if (r < 0) {
		if (s.created)
			(void)cg_rmdir(root, path, 0);
		return log_error_errno(r, "Cannot enable the memory controller in scratch cgroup %s", p);
	}
	s.root = strdup(root);
	s.path = strdup(path);
	if (!s.root || !s.path) {
		scratch_close(&s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

int scratch_cycle(const struct wbg_scratch *s, uint64_t seq)
{
	char child[PATH_MAX], p[PATH_MAX + 32];
	int r;

	snprintf(child, sizeof(child), "%s/cycle-%" PRIu64, s->path, seq);
	snprintf(p, sizeof(p), "%s/%s", s->root, child);
	if (mkdir(p, 0755) < 0)
		return -errno;
	r = cg_rmdir(s->root, child, 1000);
	return r;
}

void scratch_close(struct wbg_scratch *s)
{
	if (s->root && s->path) {
		remove_children(s->root, s->path);
		if (s->created)
			(void)cg_rmdir(s->root, s->path, 1000);
	}
	free(s->root);
	free(s->path);
	*s = (struct wbg_scratch){ 0 };
}
