/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "wbg-base.h"
#include "named-bdis.h"

/* What path names after its symlinks (udev's /dev/mapper/x -> ../dm-3,
 * /dev/disk/by-uuid/...), each read below root: its last component, the
 * kernel's name of the device ("dm-3", "vda"). readlink, not realpath:
 * below /proc/1/root an absolute link is the host's, not ours. */
static int device_name(const char *root, const char *path, char *ret, size_t size)
{
	char p[PATH_MAX], link[PATH_MAX];
	const char *base;
	int hops = 0;

	/* btrfs shows "<missing disk>" for a device it lost; a relative
	 * path would be resolved against our own directory */
	if (path[0] != '/')
		return -EINVAL;
	if ((size_t)snprintf(p, sizeof(p), "%s%s", root, path) >= sizeof(p))
		return -ENAMETOOLONG;
	for (;; hops++) {
		ssize_t n;
		char *slash;

		if (hops == 8)
			return -ELOOP; /* p is still a link: not a device's name */
		n = readlink(p, link, sizeof(link) - 1);
		if (n < 0)
			break; /* not a link (or gone): p is the name */
		link[n] = '\0';
		if (link[0] == '/') {
			if ((size_t)snprintf(p, sizeof(p), "%s%s", root, link) >= sizeof(p))
				return -ENAMETOOLONG;
			continue;
		}
		slash = strrchr(p, '/');
		if (!slash || (size_t)(slash - p) + 1 + (size_t)n >= sizeof(p))
			return -ENAMETOOLONG;
		memcpy(slash + 1, link, (size_t)n + 1);
	}
	base = strrchr(p, '/');
	base = base ? base + 1 : p;
	/* "." or ".." would name devices/ itself or its parent */
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strlen(base) >= size)
		return -EINVAL;
	snprintf(ret, size, "%s", base); /* fits: checked above */
	return 0;
}

/* Whether the filesystem at fsdir (/sys/fs/btrfs/<fsid>) has a device
 * named name among its devices/. */
static bool has_device(const char *fsdir, const char *name)
{
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s/devices/%s", fsdir, name) >= sizeof(p))
		return false;
	return faccessat(AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0; /* the link itself */
}

/* The btrfs mount of m made from one of fsdir's devices. */
static const struct wbg_mount *fs_mount(const char *fsdir, const char *root, const struct wbg_mounts *m)
{
	for (size_t i = 0; i < m->n; i++) {
		char dev[NAME_MAX + 1];

		if (strcmp(m->v[i].fstype, "btrfs") != 0 || !m->v[i].source ||
		    device_name(root, m->v[i].source, dev, sizeof(dev)) < 0)
			continue;
		if (has_device(fsdir, dev))
			return &m->v[i];
	}
	return NULL;
}

int named_bdis_read(const char *sys_fs_btrfs, const char *root, const struct wbg_mounts *m,
		    struct wbg_named_bdis *ret)
{
	_cleanup_closedir_ DIR *d = opendir(sys_fs_btrfs);
	struct dirent *de;

	*ret = (struct wbg_named_bdis){ 0 };
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char fsdir[PATH_MAX], lpath[PATH_MAX], link[PATH_MAX], *bdi;
		const struct wbg_mount *e;
		ssize_t n;

		if (de->d_name[0] == '.' ||
		    (size_t)snprintf(fsdir, sizeof(fsdir), "%s/%s", sys_fs_btrfs, de->d_name) >= sizeof(fsdir) ||
		    (size_t)snprintf(lpath, sizeof(lpath), "%s/bdi", fsdir) >= sizeof(lpath))
			continue;
		/* <fsid>/bdi -> ../../../devices/virtual/bdi/btrfs-3 ("features"
		 * has none) */
		n = readlink(lpath, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		bdi = strrchr(link, '/');
		bdi = bdi ? bdi + 1 : link;
		if (strlen(bdi) >= WBG_BDI_NAME_MAX)
			continue;
		e = fs_mount(fsdir, root, m);
		if (!e) {
			ret->unmatched++; /* not mounted in this table (another namespace's) */
			continue;
		}
		if (ret->n == WBG_NAMED_BDIS_MAX) {
			ret->dropped++;
			continue;
		}
		snprintf(ret->v[ret->n].name, WBG_BDI_NAME_MAX, "%s", bdi);
		ret->v[ret->n++].dev = e->dev;
	}
	return 0;
}

int bdi_name_dev(const struct wbg_named_bdis *t, const char *name, dev_t *ret)
{
	unsigned maj, min;
	int end = 0;

	/* fuseblk's "MAJ:MIN-fuseblk" is its mount's device too */
	if (sscanf(name, "%u:%u%n", &maj, &min, &end) == 2 &&
	    (name[end] == '\0' || strcmp(name + end, "-fuseblk") == 0)) {
		*ret = makedev(maj, min);
		return 0;
	}
	for (size_t i = 0; t && i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0) {
			*ret = t->v[i].dev;
			return 0;
		}
	return -ENODEV;
}
