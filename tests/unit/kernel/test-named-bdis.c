/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfs' bdis ("btrfs-N", one per filesystem) to the filesystem's device,
 * on temporary trees laid out as the kernel and udev lay them: /sys/fs/btrfs
 * with its "features" directory, a filesystem over an LVM volume mounted by
 * its /dev/mapper name (a udev link), one spanning two disks mounted from
 * the second, one mounted nowhere in the table, and the host's /dev below
 * a root prefix as the DaemonSet reaches it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mountinfo.h"
#include "named-bdis.h"
#include "tap.h"

static char root[] = "/tmp/wbg-named-bdis.XXXXXX"; /* mkdtemp's template */

static void mk(const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
	if (system(cmd) != 0)
		abort();
}

static void ln(const char *target, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (symlink(target, p) < 0)
		abort();
}

/* a btrfs filesystem in sysfs: its bdi link and its devices */
static void btrfs_fs(const char *fsid, const char *bdi, const char *dev1, const char *dev2)
{
	char p[256], t[256];

	snprintf(p, sizeof(p), "sys/fs/btrfs/%s/devices", fsid);
	mk(p);
	snprintf(p, sizeof(p), "sys/fs/btrfs/%s/bdi", fsid);
	snprintf(t, sizeof(t), "../../../devices/virtual/bdi/%s", bdi);
	ln(t, p);
	for (const char *d = dev1; d; d = d == dev1 ? dev2 : NULL) {
		snprintf(p, sizeof(p), "sys/fs/btrfs/%s/devices/%s", fsid, d);
		snprintf(t, sizeof(t), "../../../../devices/virtual/block/%s", d);
		ln(t, p);
	}
}

int main(void)
{
	struct wbg_named_bdis t;
	struct wbg_mounts m;
	char sysfs[256], host[256];
	dev_t d = 0;

	CHECK(mkdtemp(root) != NULL, "temporary tree");
	mk("sys/fs/btrfs/features");
	btrfs_fs("f565872d-a1ec-4e54-a8d5-ce87a7004822", "btrfs-3", "dm-2", NULL);
	btrfs_fs("0a11b8e2-1111-4e54-a8d5-ce87a7004822", "btrfs-4", "vdb", "vdc");
	btrfs_fs("9e1c7d33-2222-4e54-a8d5-ce87a7004822", "btrfs-5", "vdd", NULL);
	/* the host's /dev: udev's links to the kernel's names */
	mk("host/dev/mapper");
	ln("../dm-2", "host/dev/mapper/vg-data");
	mk("host/dev/disk/by-uuid");
	ln("../../vdc", "host/dev/disk/by-uuid/0a11b8e2");
	snprintf(sysfs, sizeof(sysfs), "%s/sys/fs/btrfs", root);
	snprintf(host, sizeof(host), "%s/host", root);
	CHECK(mountinfo_parse("40 28 0:33 / /mnt/data rw - btrfs /dev/mapper/vg-data rw,subvol=/\n"
			      "41 28 0:33 /@home /home rw - btrfs /dev/mapper/vg-data rw,subvol=/@home\n"
			      "42 28 0:40 / /srv rw - btrfs /dev/disk/by-uuid/0a11b8e2 rw\n"
			      "43 28 254:0 / / rw - ext4 /dev/vda rw\n",
			      &m) == 0 && m.n == 4,
	      "a mount table with three btrfs mounts of two filesystems and an ext4");
	CHECK(named_bdis_read(sysfs, host, &m, &t) == 0 && t.n == 2, "two btrfs bdis named (%zu)", t.n);
	CHECK(bdi_name_dev(&t, "btrfs-3", &d) == 0 && d == makedev(0, 33),
	      "btrfs-3: the filesystem mounted from /dev/mapper/vg-data -> dm-2 (0:33)");
	CHECK(bdi_name_dev(&t, "btrfs-4", &d) == 0 && d == makedev(0, 40),
	      "btrfs-4: two disks, mounted from the second by its uuid link (0:40)");
	CHECK(t.unmatched == 1 && bdi_name_dev(&t, "btrfs-5", &d) == -ENODEV,
	      "btrfs-5, mounted nowhere in the table: counted, no device");
	CHECK(bdi_name_dev(&t, "8:16", &d) == 0 && d == makedev(8, 16), "a device number is itself");
	CHECK(bdi_name_dev(NULL, "254:0", &d) == 0 && d == makedev(254, 0), "... without a table too");
	CHECK(bdi_name_dev(&t, "0:52-fuseblk", &d) == 0 && d == makedev(0, 52), "fuseblk's: its mount's device");
	CHECK(bdi_name_dev(&t, "8:16x", &d) == -ENODEV && bdi_name_dev(&t, "9p-1", &d) == -ENODEV &&
		      bdi_name_dev(NULL, "btrfs-3", &d) == -ENODEV,
	      "other names: no device");
	CHECK(named_bdis_read(sysfs, "", &m, &t) == 0 && t.n == 0 && t.unmatched == 3,
	      "the host's /dev not below this root: nothing matched, each counted");
	mountinfo_free(&m);
	{
		/* sources that name no device: btrfs' "<missing disk>", a link
		 * loop, a link to ".." (which devices/ always has) */
		char sys2[300];

		mk("sys2/fs/btrfs/aaaa/devices");
		ln("../../../devices/virtual/bdi/btrfs-6", "sys2/fs/btrfs/aaaa/bdi");
		ln("../../../../devices/virtual/block/cyc1", "sys2/fs/btrfs/aaaa/devices/cyc1");
		ln("cyc2", "host/dev/cyc1");
		ln("cyc1", "host/dev/cyc2");
		ln("..", "host/dev/up");
		snprintf(sys2, sizeof(sys2), "%s/sys2/fs/btrfs", root);
		CHECK(mountinfo_parse("50 28 0:50 / /a rw - btrfs <missing\\040disk> rw\n"
				      "51 28 0:51 / /b rw - btrfs /dev/cyc1 rw\n"
				      "52 28 0:52 / /c rw - btrfs /dev/up rw\n",
				      &m) == 0 && m.n == 3,
		      "btrfs mounts from a lost disk, a link loop and a link to ..");
		CHECK(named_bdis_read(sys2, host, &m, &t) == 0 && t.n == 0 && t.unmatched == 1,
		      "none names a device: btrfs-6 unmatched (%zu named)", t.n);
		mountinfo_free(&m);
	}
	{
		/* more btrfs filesystems than the table holds: the rest counted */
		char text[64 * 80 + 200] = "", line[128], fsid[64], bdi[32], dev[32];

		for (int i = 0; i < WBG_NAMED_BDIS_MAX + 2; i++) {
			snprintf(fsid, sizeof(fsid), "many-%d", i);
			snprintf(bdi, sizeof(bdi), "btrfs-%d", 100 + i);
			snprintf(dev, sizeof(dev), "nbd%d", i);
			btrfs_fs(fsid, bdi, dev, NULL);
			snprintf(line, sizeof(line), "%d 28 0:%d / /mnt/m%d rw - btrfs /dev/nbd%d rw\n", 100 + i, 100 + i,
				 i, i);
			if (strlen(text) + strlen(line) < sizeof(text))
				strcat(text, line);
		}
		CHECK(mountinfo_parse(text, &m) == 0 && m.n == WBG_NAMED_BDIS_MAX + 2, "66 btrfs mounts");
		CHECK(named_bdis_read(sysfs, host, &m, &t) == 0 && t.n == WBG_NAMED_BDIS_MAX && t.dropped >= 2,
		      "64 named, the rest dropped and counted (%u)", t.dropped);
		mountinfo_free(&m);
	}
	CHECK(named_bdis_read("/nonexistent", "", &m, &t) == -ENOENT && t.n == 0, "no btrfs: -ENOENT, an empty table");
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		CHECK(system(cmd) == 0, "cleanup");
	}
	return tap_done();
}
