/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mountinfo.h"
#include "tap.h"

static const char text[] =
	"22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/lower\n"
	"35 22 254:0 /volumes/pv1 /var/lib/kubelet/pods/x/volumes/pv1 rw shared:9 - ext4 /dev/vda rw\n"
	"36 22 254:0 / /mnt/ext4 rw,relatime shared:10 master:3 - ext4 /dev/vda rw\n"
	"37 22 254:16 / /mnt/with\\040space rw - xfs /dev/vdb rw,attr2\n"
	"38 22 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	"garbage line without fields\n"
	"39 22 8:1 / /no/dash rw shared:3\n";

int main(void)
{
	struct wbg_mounts m;
	const struct wbg_mount *e;

	CHECK(mountinfo_parse(text, &m) == 0 && m.n == 5, "five valid lines, two bad ones skipped (%zu)", m.n);
	e = mountinfo_find_dev(&m, makedev(254, 0));
	CHECK(e && strcmp(e->target, "/mnt/ext4") == 0, "the mount showing the fs root wins over a bind mount");
	CHECK(e && strcmp(e->fstype, "ext4") == 0 && strcmp(e->source, "/dev/vda") == 0, "fstype and source");
	e = mountinfo_find_dev(&m, makedev(254, 16));
	CHECK(e && strcmp(e->target, "/mnt/with space") == 0, "octal escapes undone");
	CHECK(mountinfo_find_dev(&m, makedev(8, 1)) == NULL, "line without separator ignored");
	CHECK(mountinfo_find_dev(&m, makedev(1, 1)) == NULL, "unknown device");
	CHECK(mountinfo_prefix(&m, "/proc/1/root") == 0, "prefix");
	e = mountinfo_find_dev(&m, makedev(254, 0));
	CHECK(e && strcmp(e->target, "/proc/1/root/mnt/ext4") == 0, "a mount point below the host's root");
	CHECK(strcmp(m.v[0].target, "/proc/1/root") == 0, "'/' becomes the host's root itself");
	CHECK(mountinfo_prefix(&m, "") == 0 && strcmp(m.v[0].target, "/proc/1/root") == 0, "an empty prefix changes nothing");
	mountinfo_free(&m);
	CHECK(mountinfo_parse("", &m) == 0 && m.n == 0, "empty text");
	mountinfo_free(&m);
	{
		char t[32];

		CHECK(mountinfo_dir_fstype("/proc/self/mountinfo", "/proc", t, sizeof(t)) == 0 && strcmp(t, "proc") == 0,
		      "the filesystem a directory is on (verify's --dir): /proc is %s", t);
		CHECK(mountinfo_dir_fstype("/proc/self/mountinfo", "/nonexistent/x", t, sizeof(t)) == -ENOENT,
		      "a missing directory: -ENOENT");
	}
	{
		/* an overlay's writes go to its upper layer, escaped as the
		 * kernel escapes option values; a lower-only one has none */
		static const char ov[] =
			"40 22 0:101 / /run/c/1/rootfs rw - overlay overlay rw,lowerdir=/l1:/l2,upperdir=/tmp/up\\054per\\040dir,workdir=/w\n"
			"41 22 0:102 / /run/c/2/rootfs ro - overlay overlay ro,lowerdir=/l1:/l2\n"
			"42 22 0:103 / /run/c/3/rootfs rw - overlay overlay rw,upperdir=/proc,workdir=/w\n";
		struct stat st;
		dev_t d = 0;

		CHECK(mountinfo_parse(ov, &m) == 0 && m.n == 3 && m.v[0].upper && strcmp(m.v[0].upper, "/tmp/up,per dir") == 0,
		      "an overlay's upperdir, unescaped (%s)", m.n ? m.v[0].upper : "-");
		CHECK(!m.v[1].upper, "a lower-only overlay: no upper layer");
		CHECK(mountinfo_overlay_upper_dev(&m, makedev(0, 102), &d) == -ENOENT, "... nothing to key it by: -ENOENT");
		CHECK(stat("/proc", &st) == 0 && mountinfo_overlay_upper_dev(&m, makedev(0, 103), &d) == 0 && d == st.st_dev,
		      "the device of the filesystem its upper layer is on");
		CHECK(mountinfo_overlay_upper_dev(&m, makedev(254, 0), &d) == -ENOENT, "not an overlay: -ENOENT");
		mountinfo_free(&m);
	}
	return tap_done();
}
