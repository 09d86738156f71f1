/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The planner without BPF: every block-backed filesystem with writeback,
 * once, with its syncfs passes; pseudo filesystems, overlay and bind mounts
 * never. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "wbg-kernel.h"
#include "wbg-config.h"
#include "tap.h"

static const char text[] = "22 1 0:21 / / rw - overlay overlay rw\n"
			   "23 22 0:22 / /proc rw - proc proc rw\n"
			   "24 22 0:23 / /run rw - tmpfs tmpfs rw\n"
			   "25 22 254:0 / /mnt/ext4 rw - ext4 /dev/vda rw\n"
			   "26 22 254:0 /sub /var/lib/x rw - ext4 /dev/vda rw\n"
			   "27 22 254:16 / /mnt/xfs rw - xfs /dev/vdb rw\n"
			   "28 22 0:40 / /mnt/btrfs rw - btrfs /dev/vdc rw\n"
			   "29 22 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
			   "30 22 0:50 / /mnt/nfs rw - nfs4 srv:/x rw\n"
			   "31 22 0:51 / /mnt/fuse rw - fuse.sshfs u@h: rw\n";

int main(void)
{
	struct wbg_config c;
	struct wbg_plan_params pp;
	struct wbg_mounts m;
	struct wbg_plan p;

	config_init(&c);
	pp = config_plan_params(&c);
	mountinfo_parse(text, &m);
	CHECK(handover_plan(42, &pp, &m, NULL, NULL, &p) == 0, "plan without BPF");
	CHECK(strcmp(p.source, "mounts") == 0, "source: mounts");
	CHECK(p.n == 3, "ext4, xfs and btrfs once each; not overlay, tmpfs, proc (%zu)", p.n);
	CHECK(p.n_excluded == 2, "nfs4 and fuse.sshfs left out by default: their syncfs can hang (%u)", p.n_excluded);
	CHECK(p.n >= 1 && p.t[0].dev == makedev(254, 0) && strcmp(p.t[0].mount, "/mnt/ext4") == 0 && p.t[0].passes == 2,
	      "ext4 through the mount of its root, 2 passes");
	CHECK(p.n >= 2 && p.t[1].dev == makedev(254, 16) && p.t[1].passes == 1 && !p.t[1].use_inodes,
	      "xfs: 1 pass of syncfs");
	CHECK(p.n >= 3 && p.t[2].dev == makedev(0, 40) && p.t[2].passes == 1, "btrfs, anonymous dev, 1 pass");
	plan_free(&p);
	CHECK(!fstype_has_writeback("tmpfs") && !fstype_has_writeback("proc") && fstype_has_writeback("ext4") &&
		      fstype_has_writeback("btrfs") && fstype_has_writeback("overlay"),
	      "which filesystems have writeback");
	{
		dev_t ns[] = { makedev(254, 16), makedev(9, 9) /* not mounted here */ };

		CHECK(handover_plan_devs(&pp, &m, ns, 2, &p) == 0 && p.n == 1 && p.t[0].dev == makedev(254, 16) &&
			      strcmp(p.source, "mountns") == 0,
		      "mount-namespace plan: only what the processes saw and we can reach");
		plan_free(&p);
	}
	{
		dev_t *devs;
		unsigned n;

		CHECK(mountns_devs("/proc", getpid(), &devs, &n) == 0 && n >= 1, "our own namespace has a filesystem");
		free(devs);
		CHECK(mountns_devs("/proc", 999999999, &devs, &n) == -ENOENT, "a process that is gone: -ENOENT");
	}
	CHECK(config_parse_string(&c, "t", "[flush]\nexclude_fstypes =\n") == 0, "exclude_fstypes emptied");
	pp = config_plan_params(&c);
	CHECK(handover_plan(42, &pp, &m, NULL, NULL, &p) == 0 && p.n == 5 && p.n_excluded == 0,
	      "exclude_fstypes empty: every filesystem (%zu)", p.n);
	plan_free(&p);
	CHECK(config_parse_string(&c, "t", "[flush]\nexclude_fstypes = xfs\n") == 0, "exclude_fstypes set");
	pp = config_plan_params(&c);
	CHECK(handover_plan(42, &pp, &m, NULL, NULL, &p) == 0 && p.n == 4 && p.n_excluded == 1,
	      "an admin's list replaces the default");
	plan_free(&p);
	CHECK(config_parse_string(&c, "t", "[flush]\nexclude_fstypes = ../x\n") < 0, "a path is refused");
	mountinfo_free(&m);
	config_done(&c);
	return tap_done();
}
