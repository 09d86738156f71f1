/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Devices to bdis and back on fake sysfs trees laid out as the kernel lays
 * them: a partitioned SCSI disk, an NVMe namespace, LVM (dm) over a
 * partition, an md array with a partition, a loop device. A stall or a
 * wb_stats line names the disk; the planner must find the filesystems on
 * its partitions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "blockdev.h"
#include "wbg-config.h"
#include "mountinfo.h"
#include "wbg-flush.h"
#include "tap.h"

static char root[] = "/tmp/wbg-bdi.XXXXXX";

static void put(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void dir(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "mkdir -p '%s/%s'", root, rel);
	if (system(p) != 0)
		printf("# %s failed\n", p);
}

/* devices/.../NAME (a disk) or devices/.../DISK/NAME (a partition), with
 * dev/block/MAJ:MIN linking to it as sysfs does */
static void device(const char *path, const char *majmin, int partition)
{
	char rel[512], link[512], target[512];

	snprintf(rel, sizeof(rel), "devices/%s", path);
	dir(rel);
	snprintf(rel, sizeof(rel), "devices/%s/dev", path);
	snprintf(target, sizeof(target), "%s\n", majmin);
	put(rel, target);
	if (partition) {
		snprintf(rel, sizeof(rel), "devices/%s/partition", path);
		put(rel, "1\n");
	}
	snprintf(link, sizeof(link), "%s/dev/block/%s", root, majmin);
	snprintf(target, sizeof(target), "../../devices/%s", path);
	if (symlink(target, link) < 0)
		printf("# symlink %s: %s\n", link, strerror(errno));
}

static dev_t bdi(dev_t d)
{
	char sys[512];
	dev_t r = makedev(99, 99);

	snprintf(sys, sizeof(sys), "%s/dev/block", root);
	return blockdev_bdi(sys, d, &r) < 0 ? makedev(99, 99) : r;
}

static bool has_target(const struct wbg_plan *p, dev_t dev, const char *mount)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].dev == dev && p->t[i].kind == FLUSH_FS && strcmp(p->t[i].mount, mount) == 0)
			return true;
	return false;
}

static const char mounts[] = "20 1 0:21 / / rw - overlay overlay rw\n"
			     "21 20 8:1 / /boot rw - ext4 /dev/sda1 rw\n"
			     "22 20 8:3 / /var/lib rw - xfs /dev/sda3 rw\n"
			     "23 20 8:3 /kubelet/pv1 /pods/a/vol rw - xfs /dev/sda3 rw\n"
			     "24 20 259:2 / /data rw - ext4 /dev/nvme0n1p2 rw\n"
			     "25 20 253:0 / /srv rw - xfs /dev/mapper/vg-lv rw\n"
			     "26 20 259:5 / /md rw - ext4 /dev/md0p1 rw\n"
			     "27 20 7:0 / /loop rw - ext4 /dev/loop0 rw\n"
			     "28 20 0:40 / /btrfs rw - btrfs /dev/sdb rw\n"
			     "29 20 0:23 / /run rw - tmpfs tmpfs rw\n";

int main(void)
{
	struct wbg_config c;
	struct wbg_plan_params pp;
	struct wbg_mounts m;
	struct wbg_plan p;
	char sys[512];

	if (!mkdtemp(root))
		return 1;
	dir("dev/block");
	device("pci0000:00/0000:00:05.0/host0/target0:0:0/0:0:0:0/block/sda", "8:0", 0);
	device("pci0000:00/0000:00:05.0/host0/target0:0:0/0:0:0:0/block/sda/sda1", "8:1", 1);
	device("pci0000:00/0000:00:05.0/host0/target0:0:0/0:0:0:0/block/sda/sda2", "8:2", 1);
	device("pci0000:00/0000:00:05.0/host0/target0:0:0/0:0:0:0/block/sda/sda3", "8:3", 1);
	device("pci0000:00/0000:00:06.0/nvme/nvme0/nvme0n1", "259:0", 0);
	device("pci0000:00/0000:00:06.0/nvme/nvme0/nvme0n1/nvme0n1p1", "259:1", 1);
	device("pci0000:00/0000:00:06.0/nvme/nvme0/nvme0n1/nvme0n1p2", "259:2", 1);
	device("virtual/block/dm-0", "253:0", 0); /* LVM over sda2: a bdi of its own */
	dir("devices/virtual/block/dm-0/slaves");
	device("virtual/block/md0", "9:0", 0);
	device("virtual/block/md0/md0p1", "259:5", 1);
	device("virtual/block/loop0", "7:0", 0);
	snprintf(sys, sizeof(sys), "%s/dev/block", root);

	CHECK(bdi(makedev(8, 1)) == makedev(8, 0) && bdi(makedev(8, 3)) == makedev(8, 0), "partitions: the disk's bdi");
	CHECK(bdi(makedev(8, 0)) == makedev(8, 0), "a whole disk: its own");
	CHECK(bdi(makedev(259, 2)) == makedev(259, 0), "nvme0n1p2: nvme0n1's (259:0, minors not contiguous)");
	CHECK(bdi(makedev(253, 0)) == makedev(253, 0), "dm over a partition: its own bdi");
	CHECK(bdi(makedev(259, 5)) == makedev(9, 0), "a partition of md0: md0's");
	CHECK(bdi(makedev(7, 0)) == makedev(7, 0), "loop: its own");
	CHECK(bdi(makedev(0, 40)) == makedev(0, 40), "anonymous device (btrfs, NFS): its own name");
	CHECK(bdi(makedev(8, 99)) == makedev(8, 99), "a device sysfs does not know: its own");
	{
		dev_t r;

		put("devices/virtual/block/md0/dev", "garbage\n");
		CHECK(blockdev_bdi(sys, makedev(259, 5), &r) == -EINVAL, "a disk's dev file that is no MAJ:MIN: -EINVAL");
		put("devices/virtual/block/md0/dev", "9:0\n");
	}

	config_init(&c);
	pp = config_plan_params(&c);
	CHECK(mountinfo_parse(mounts, &m) == 0 && m.n == 10, "mount table");
	CHECK(m.v[1].bdi == m.v[1].dev, "unresolved, a mount's bdi is its device");
	CHECK(mountinfo_resolve_bdis(&m, sys) == 0, "every mount resolved");
	CHECK(m.v[1].bdi == makedev(8, 0) && m.v[3].bdi == makedev(8, 0) && m.v[4].bdi == makedev(259, 0) &&
		      m.v[5].bdi == makedev(253, 0) && m.v[0].bdi == makedev(0, 21),
	      "bdis in the mount table");

	/* a stall on sda: every filesystem on its partitions, each once */
	CHECK(handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(8, 0) }, &(bool){ false }, 1, &p) == 0 && p.n == 2 &&
		      has_target(&p, makedev(8, 1), "/boot") && has_target(&p, makedev(8, 3), "/var/lib"),
	      "a stall on 8:0: the filesystems on sda1 and sda3, through their root mounts (%zu)", p.n);
	plan_free(&p);
	CHECK(handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(259, 0) }, &(bool){ false }, 1, &p) == 0 &&
		      p.n == 1 && has_target(&p, makedev(259, 2), "/data"),
	      "a stall on nvme0n1: nvme0n1p2's filesystem");
	plan_free(&p);
	CHECK(handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(253, 0) }, &(bool){ false }, 1, &p) == 0 &&
		      p.n == 1 && has_target(&p, makedev(253, 0), "/srv"),
	      "a stall on dm-0: the LVM volume's filesystem, not sda's");
	plan_free(&p);
	CHECK(handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(9, 0) }, &(bool){ false }, 1, &p) == 0 && p.n == 1 &&
		      has_target(&p, makedev(259, 5), "/md"),
	      "a stall on md0: md0p1's filesystem");
	plan_free(&p);
	CHECK(handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(8, 3) }, &(bool){ false }, 1, &p) == 0 && p.n == 1 &&
		      has_target(&p, makedev(8, 3), "/var/lib"),
	      "a recorded partition (a restart's pending target): that filesystem alone");
	plan_free(&p);
	CHECK(handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(0, 23) }, &(bool){ false }, 1, &p) == 0 && p.n == 0,
	      "tmpfs: nothing to write");
	plan_free(&p);
	CHECK(config_parse_string(&c, "t", "[flush]\nexclude_fstypes = xfs\n") == 0 &&
		      handover_plan_recorded(&pp, &m, NULL, &(dev_t){ makedev(8, 0) }, &(bool){ false }, 1, &p) == 0 &&
		      p.n == 1 && p.n_excluded == 1 && has_target(&p, makedev(8, 1), "/boot"),
	      "exclude_fstypes holds for a disk's filesystems too");
	plan_free(&p);
	mountinfo_free(&m);
	config_done(&c);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), getenv("KEEP") ? "true %s" : "rm -rf '%s'", root);
		if (system(cmd) != 0)
			printf("# %s failed\n", cmd);
	}
	return tap_done();
}
