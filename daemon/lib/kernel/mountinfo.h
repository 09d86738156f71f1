/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/self/mountinfo: which mount reaches the filesystem of a device. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

struct wbg_mount {
	dev_t dev;
	dev_t bdi;    /* the device its bdi is named by (blockdev_bdi); dev until resolved */
	char *root;   /* path inside the filesystem that is mounted */
	char *target; /* mount point, unescaped */
	char *fstype;
	char *source;
	char *upper;  /* an overlay's upperdir=, where its writes go; else NULL */
};

struct wbg_mounts {
	struct wbg_mount *v;
	size_t n;
};

int mountinfo_parse(const char *text, struct wbg_mounts *ret);
int mountinfo_read(const char *path, struct wbg_mounts *ret);
void mountinfo_free(struct wbg_mounts *m);
/* Puts prefix (the host's root seen from here, "/proc/1/root") before every
 * mount point, so that opening one reaches the host's mount. */
int mountinfo_prefix(struct wbg_mounts *m, const char *prefix);
/* Each mount's bdi from sysfs ("/sys/dev/block"): its partition's disk,
 * or its own device. Returns how many could not be resolved (left as their
 * own device). */
unsigned mountinfo_resolve_bdis(struct wbg_mounts *m, const char *sysfs_dev_block);
/* A mount of the filesystem on dev, the one showing its root if any. */
const struct wbg_mount *mountinfo_find_dev(const struct wbg_mounts *m, dev_t dev);
/* The device of the filesystem an overlay on dev writes to (its upperdir's),
 * whose syncfs the overlay's is: -ENOENT when dev is no overlay with an
 * upper layer in m. */
int mountinfo_overlay_upper_dev(const struct wbg_mounts *m, dev_t dev, dev_t *ret);
/* The type of the filesystem dir is on ("" when not in the table), from the
 * mount table at mountinfo. */
int mountinfo_dir_fstype(const char *mountinfo, const char *dir, char *ret, size_t size);
