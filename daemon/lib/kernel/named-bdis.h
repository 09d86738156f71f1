/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bdis named otherwise than by a device number. A block device's bdi is
 * named "MAJOR:MINOR", but btrfs gives each filesystem a bdi of its own,
 * "btrfs-N", whatever disks it spans, and a stall's report or a wb_stats
 * directory names that: which mounted filesystem it is comes from
 * /sys/fs/btrfs/<fsid>/bdi and devices/ matched to the btrfs mounts by the
 * device each was mounted from.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "mountinfo.h"

#define WBG_BDI_NAME_MAX 32
/* btrfs filesystems a node has mounted at once: past it, counted */
#define WBG_NAMED_BDIS_MAX 64

struct wbg_named_bdi {
	char name[WBG_BDI_NAME_MAX];
	dev_t dev; /* the filesystem's device as mountinfo shows it */
};

struct wbg_named_bdis {
	struct wbg_named_bdi v[WBG_NAMED_BDIS_MAX];
	size_t n;
	unsigned unmatched; /* a btrfs bdi no mount in the table was made from */
	unsigned dropped;   /* past WBG_NAMED_BDIS_MAX */
};

/* The btrfs bdis under sys_fs_btrfs ("/sys/fs/btrfs") matched to the btrfs
 * mounts of m, each mount's source device read below root (the host's root
 * as seen from here, "" or "/proc/1/root"). -ENOENT: no btrfs here (an
 * empty table, still valid). */
int named_bdis_read(const char *sys_fs_btrfs, const char *root, const struct wbg_mounts *m,
		    struct wbg_named_bdis *ret);
/* A bdi's name as the kernel prints it ("8:0", "0:52-fuseblk", "btrfs-3") to
 * the device its filesystems are found by: the number itself, or the btrfs
 * filesystem's from t (NULL: numbers only). -ENODEV: neither. */
int bdi_name_dev(const struct wbg_named_bdis *t, const char *name, dev_t *ret);
