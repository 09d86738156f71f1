/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "blockdev.h"
#include "tap.h"

#define UEV(s) s, sizeof(s) - 1

int main(void)
{
	static const char add[] = "add@/devices/pci0000:00/0000:00:05.0/virtio2/block/vdb\0ACTION=add\0"
				  "DEVPATH=/devices/pci0000:00/0000:00:05.0/virtio2/block/vdb\0SUBSYSTEM=block\0"
				  "MAJOR=253\0MINOR=16\0DEVNAME=vdb\0DEVTYPE=disk\0SEQNUM=1234\0";
	static const char rm[] = "remove@/devices/virtual/block/loop0\0ACTION=remove\0SUBSYSTEM=block\0"
				 "MAJOR=7\0MINOR=0\0DEVNAME=loop0\0";
	static const char evil[] = "add@/x\0ACTION=add\0SUBSYSTEM=block\0MAJOR=8\0MINOR=0\0DEVNAME=../etc/passwd\0";
	static const char udev[] = "libudev\0\xfe\xed\xca\xfe";
	static const char trunc[] = "add@/x\0ACTION=add\0SUBSYSTEM=bl";
	char tmp[] = "/tmp/wbg-bdev.XXXXXX", p[256];
	struct blockdevs b;
	struct uevent u;
	FILE *f;

	CHECK(uevent_parse(UEV(add), &u) == 0, "kernel uevent parses");
	CHECK(strcmp(u.action, "add") == 0 && strcmp(u.subsystem, "block") == 0 && strcmp(u.devname, "vdb") == 0 &&
		      strcmp(u.devtype, "disk") == 0 && u.major == 253 && u.minor == 16,
	      "fields");
	CHECK(uevent_parse(udev, sizeof(udev) - 1, &u) == -EINVAL, "udev's own messages are not ours");
	CHECK(uevent_parse(trunc, sizeof(trunc) - 1, &u) == -EINVAL, "truncated datagram refused");
	CHECK(uevent_parse("", 0, &u) == -EINVAL, "empty");

	/* A sysfs stand-in with one device. */
	if (!mkdtemp(tmp))
		return 1;
	snprintf(p, sizeof(p), "%s/254:0", tmp);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/254:0/uevent", tmp);
	f = fopen(p, "w");
	fputs("MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n", f);
	fclose(f);
	CHECK(blockdevs_init(&b, tmp, "/dev") == 0 && b.n == 1, "one device from sysfs");
	CHECK(blockdevs_node(&b, makedev(254, 0)) && strcmp(blockdevs_node(&b, makedev(254, 0)), "/dev/vda") == 0,
	      "its node");
	uevent_parse(UEV(add), &u);
	CHECK(blockdevs_apply(&b, &u) == 1 && strcmp(blockdevs_node(&b, makedev(253, 16)), "/dev/vdb") == 0,
	      "hot-added device");
	CHECK(blockdevs_apply(&b, &u) == 0, "the same add again changes nothing");
	uevent_parse(UEV(rm), &u);
	CHECK(blockdevs_apply(&b, &u) == 0, "removing an unknown device changes nothing");
	uevent_parse(UEV(evil), &u);
	CHECK(blockdevs_apply(&b, &u) < 0 && blockdevs_node(&b, makedev(8, 0)) == NULL,
	      "a DEVNAME climbing out of /dev is refused");
	{
		struct uevent r = { .action = "remove", .subsystem = "block", .major = 253, .minor = 16 };

		CHECK(blockdevs_apply(&b, &r) == 1 && blockdevs_node(&b, makedev(253, 16)) == NULL, "removed");
	}
	blockdevs_done(&b);
	snprintf(p, sizeof(p), "rm -rf %s", tmp);
	return system(p) == 0 ? tap_done() : 1;
}
