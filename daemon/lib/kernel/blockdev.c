/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "blockdev.h"
#include "wbg-base.h"

struct bdev {
	dev_t dev;
	char *node;
};

static int cmp(const void *a, const void *b)
{
	dev_t x = ((const struct bdev *)a)->dev, y = ((const struct bdev *)b)->dev;

	return x < y ? -1 : x > y;
}

int uevent_parse(const char *buf, size_t len, struct uevent *ret)
{
	struct uevent u = { .major = -1, .minor = -1 };
	const char *p = buf, *end = buf + len;

	/* The header "ACTION@DEVPATH"; udevd's rebroadcasts start "libudev". */
	if (len == 0 || !memchr(buf, '@', strnlen(buf, len)) || memchr(buf, 0, len) == NULL)
		return -EINVAL;
	while (p < end) {
		size_t n = strnlen(p, (size_t)(end - p));

		if (p + n == end)
			return -EINVAL; /* truncated: no terminating NUL */
		if (strncmp(p, "ACTION=", 7) == 0)
			u.action = p + 7;
		else if (strncmp(p, "SUBSYSTEM=", 10) == 0)
			u.subsystem = p + 10;
		else if (strncmp(p, "DEVNAME=", 8) == 0)
			u.devname = p + 8;
		else if (strncmp(p, "DEVTYPE=", 8) == 0)
			u.devtype = p + 8;
		else if (strncmp(p, "MAJOR=", 6) == 0)
			u.major = atoi(p + 6);
		else if (strncmp(p, "MINOR=", 6) == 0)
			u.minor = atoi(p + 6);
		p += n + 1;
	}
	if (!u.action || !u.subsystem)
		return -EINVAL;
	*ret = u;
	return 0;
}

static void bdev_free(void *p)
{
	struct bdev *d = p;

	free(d->node);
	free(d);
}

static int put(struct blockdevs *b, dev_t dev, const char *devname)
{
	struct bdev *d, **f;
	char node[PATH_MAX];

	/* DEVNAME is relative to /dev; refuse anything that climbs out. */
	if (!*devname || devname[0] == '/' || strstr(devname, ".."))
		return -EINVAL;
	snprintf(node, sizeof(node), "%s/%s", b->dev_root, devname);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dev = dev;
	d->node = strdup(node);
	if (!d->node) {
		free(d);
		return -ENOMEM;
	}
	f = tsearch(d, &b->tree, cmp);
	if (!f) {
		bdev_free(d);
		return -ENOMEM;
	}
	if (*f != d) {
		int changed = strcmp((*f)->node, d->node) != 0;

		free((*f)->node);
		(*f)->node = d->node;
		free(d);
		return changed;
	}
	b->n++;
	return 1;
}

static int drop(struct blockdevs *b, dev_t dev)
{
	struct bdev key = { .dev = dev }, **f = tfind(&key, &b->tree, cmp), *d;

	if (!f)
		return 0;
	d = *f;
	tdelete(d, &b->tree, cmp);
	bdev_free(d);
	b->n--;
	return 1;
}

int blockdevs_init(struct blockdevs *b, const char *sysfs_dev_block, const char *dev_root)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	*b = (struct blockdevs){ 0 };
	b->dev_root = strdup(dev_root);
	if (!b->dev_root)
		return -ENOMEM;
	d = opendir(sysfs_dev_block);
	if (!d)
		return -errno;
	/* /sys/dev/block/MAJ:MIN/uevent has the same KEY=VALUE lines. */
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		char p[PATH_MAX], *name;
		unsigned maj, min;

		if (sscanf(de->d_name, "%u:%u", &maj, &min) != 2)
			continue;
		snprintf(p, sizeof(p), "%s/%s/uevent", sysfs_dev_block, de->d_name);
		if (read_small_file_at(AT_FDCWD, p, 4096, &text) < 0)
			continue;
		name = strstr(text, "DEVNAME=");
		if (!name)
			continue;
		name += 8;
		name[strcspn(name, "\n")] = 0;
		if (put(b, makedev(maj, min), name) == -ENOMEM)
			return -ENOMEM;
	}
	return 0;
}

void blockdevs_done(struct blockdevs *b)
{
	tdestroy(b->tree, bdev_free);
	free(b->dev_root);
	*b = (struct blockdevs){ 0 };
}

int blockdevs_apply(struct blockdevs *b, const struct uevent *u)
{
	if (strcmp(u->subsystem, "block") != 0 || u->major < 0 || u->minor < 0)
		return 0;
	if (strcmp(u->action, "remove") == 0)
		return drop(b, makedev(u->major, u->minor));
	if ((strcmp(u->action, "add") == 0 || strcmp(u->action, "change") == 0) && u->devname)
		return put(b, makedev(u->major, u->minor), u->devname);
	return 0;
}

const char *blockdevs_node(const struct blockdevs *b, dev_t dev)
{
	struct bdev key = { .dev = dev }, **f = tfind(&key, &b->tree, cmp);

	return f ? (*f)->node : NULL;
}

int blockdev_bdi(const char *sysfs_dev_block, dev_t dev, dev_t *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	unsigned maj, min;
	int r;

	/* anonymous devices (major 0) have no sysfs entry: their bdi, where
	 * they have one, is named by the device itself */
	snprintf(path, sizeof(path), "%s/%u:%u/partition", sysfs_dev_block, major(dev), minor(dev));
	if (major(dev) == 0 || access(path, F_OK) < 0) {
		if (major(dev) != 0 && errno != ENOENT)
			return -errno;
		*ret = dev;
		return 0;
	}
	/* "MAJ:MIN/.." follows the link first: the disk's directory */
	snprintf(path, sizeof(path), "%s/%u:%u/../dev", sysfs_dev_block, major(dev), minor(dev));
	r = read_small_file_at(AT_FDCWD, path, 64, &text);
	if (r < 0)
		return r;
	if (sscanf(text, "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	*ret = makedev(maj, min);
	return 1;
}
