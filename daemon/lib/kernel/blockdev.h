/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block devices by number: which node to open to write back a device's own
 * page cache. Filled from sysfs at start and kept current from kernel
 * kobject uevents (NETLINK_KOBJECT_UEVENT through libnl), so it works in a
 * container or an initrd without udev's /dev/block links.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct uevent {
	const char *action;    /* add, remove, change, ... */
	const char *subsystem; /* block, ... */
	const char *devname;   /* sda1, vda, dm-0 (relative to /dev) */
	const char *devtype;   /* disk, partition */
	int major, minor;      /* -1 when absent */
};

/* Parses one kernel uevent datagram ("ACTION@DEVPATH\0KEY=VALUE\0..."). The
 * strings point into buf. -EINVAL for anything else (udev's own
 * "libudev" messages, truncated data). */
int uevent_parse(const char *buf, size_t len, struct uevent *ret);

struct blockdevs {
	void *tree;
	size_t n;
	char *dev_root; /* "/dev" */
};

int blockdevs_init(struct blockdevs *b, const char *sysfs_dev_block, const char *dev_root);
void blockdevs_done(struct blockdevs *b);
/* Applies an uevent; returns 1 when the set of devices changed. */
int blockdevs_apply(struct blockdevs *b, const struct uevent *u);
/* The node of a device ("/dev/vda"), or NULL. */
const char *blockdevs_node(const struct blockdevs *b, dev_t dev);

/* The device whose bdi (backing_dev_info) writes dev's page cache and the
 * filesystem on it: the kernel names a bdi, and so a wb's device in
 * wb_stats and in the stall's cgroup_writeback_by_id(), after the whole
 * disk. A partition's is its disk's (sda1 -> sda, nvme0n1p2 -> nvme0n1,
 * md0p1 -> md0); a disk, dm, md or loop device is its own, and so is a
 * device sysfs does not know (anonymous: NFS, FUSE, overlay). From
 * sysfs_dev_block ("/sys/dev/block"): MAJ:MIN links to the device's
 * directory, a partition's lies in its disk's and has a "partition" file.
 * Returns 1 for a partition, 0 for a device that is its own bdi. */
int blockdev_bdi(const char *sysfs_dev_block, dev_t dev, dev_t *ret);
