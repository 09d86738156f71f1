/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a new wbguardd redoes at start (recovery.c), against temporary
 * trees and a real lifecycle in the pretend world: the pending records a
 * killed run left (pending.h) redone as handovers "recovered" and dropped,
 * the cgroups they named returned sorted; then the dying wbs wb_stats
 * still lists dirty that no record named and cgroupfs no longer has, each
 * cgroup one handover of the devices its bdis name. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lifecycle-world.h"
#include "wbg-base.h"
#include "pending.h"
#include "recovery.h"
#include "tap.h"
#include "wbg-kernel.h"

/* Cgroup ids cgroupfs does not have: removed cgroups, as wb_stats names
 * their dying wbs (inode numbers this far up are no temporary dir's). */
#define GONE_A (UINT64_C(1) << 50)
#define GONE_B (GONE_A + 1)

/* One test's trees: the state dir, a debugfs stand-in (bdi/<bdi>/wb_stats)
 * and a cgroupfs stand-in (directories: their inode numbers are the
 * cgroup ids). */
static char root[64], state[96], debugfs[96], cgroupfs[96];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p) < 0 ? -errno : 0;
}

static void trees_open(void)
{
	snprintf(root, sizeof(root), "/tmp/wbg-recovery-XXXXXX");
	if (!mkdtemp(root))
		abort();
	snprintf(state, sizeof(state), "%s/state", root);
	snprintf(debugfs, sizeof(debugfs), "%s/debug", root);
	snprintf(cgroupfs, sizeof(cgroupfs), "%s/cgroup", root);
	if (mkdir(state, 0755) < 0 || mkdir(debugfs, 0755) < 0 || mkdir(cgroupfs, 0755) < 0)
		abort();
	setup(false);
}

static void trees_close(void)
{
	teardown();
	(void)nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* <under>/<rel> holding text, its directories made on the way */
static void put_file(const char *under, const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", under, rel);
	for (char *s = strchr(p + strlen(under) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		(void)mkdir(p, 0755);
		*s = '/';
	}
	f = fopen(p, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

/* A bdi's wb_stats with one wb of each cgroup, dirty (b_dirty) */
static void put_dirty_wbs(const char *bdi, const uint64_t *cgs, size_t n)
{
	char rel[128], text[2048] = "";
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += snprintf(text + len, sizeof(text) - len, "WbCgIno: %" PRIu64 "\nb_dirty: 3\nstate: 1\n\n", cgs[i]);
	snprintf(rel, sizeof(rel), "bdi/%s/wb_stats", bdi);
	put_file(debugfs, rel, text);
}

static void put_dirty_wb(const char *bdi, uint64_t cg)
{
	put_dirty_wbs(bdi, &cg, 1);
}

/* A record of a handover of one filesystem, on 8:0 */
static void save_record(uint64_t id, const char *path, uint64_t cgroup_id)
{
	const dev_t devs[1] = { makedev(8, 0) };
	const bool bdev[1] = { false };

	if (pending_save(state, id, path, cgroup_id, devs, bdev, 1) < 0)
		abort();
}

/* A live cgroup: a directory of the cgroupfs stand-in; its id */
static uint64_t live_cgroup(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", cgroupfs, rel);
	if (mkdir(p, 0755) < 0 || stat(p, &st) < 0)
		abort();
	return st.st_ino;
}

static bool file_exists(const char *in, const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", in, name);
	return access(p, F_OK) == 0;
}

/* The handovers started for a cgroup; *ret_k: the last one's place in
 * world.sub, which is also its plan's in world.recorded (the pretend
 * planner gives each recovered handover one target, flushed at once). */
static unsigned started(uint64_t cgroup_id, unsigned *ret_k)
{
	unsigned n = 0;

	for (unsigned k = 0; k < world.n_sub; k++) {
		const struct wbg_handover *h = lifecycle_find(&lc, world.sub[k].id);

		if (h && h->cgroup_id == cgroup_id) {
			n++;
			if (ret_k)
				*ret_k = k;
		}
	}
	return n;
}

static const struct wbg_handover *handover_of(uint64_t cgroup_id)
{
	unsigned k = 0;

	return started(cgroup_id, &k) ? lifecycle_find(&lc, world.sub[k].id) : NULL;
}

static bool recorded_devs_are(unsigned k, const dev_t *devs, const bool *bdev, size_t n)
{
	if (k >= world.n_recorded || world.recorded[k].n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (world.recorded[k].devs[i] != devs[i] || world.recorded[k].bdev[i] != bdev[i])
			return false;
	return true;
}

static void test_pending(void)
{
	const dev_t devs_a[2] = { makedev(8, 0), makedev(8, 16) }, devs_b[1] = { makedev(253, 3) };
	const bool bdev_a[2] = { false, true }, bdev_b[1] = { false };
	_cleanup_free_ uint64_t *covered = NULL;
	const struct wbg_handover *h;
	size_t n = 0;
	unsigned k = 0;

	trees_open();
	/* cgroup ids in no order of their records' (made, reversed or by
	 * name): covered must be sorted by cgroup */
	if (pending_save(state, 5, "kubepods/pod-a", 300, devs_a, bdev_a, 2) < 0 ||
	    pending_save(state, 9, "kubepods/pod-b", 200, devs_b, bdev_b, 1) < 0 ||
	    pending_save(state, 7, "kubepods/pod-c", 400, devs_b, bdev_b, 1) < 0)
		abort();
	put_file(state, "handover-ids", "8192\n");
	CHECK(recover_pending(&lc, state, &covered, &n) == 0, "pending: two records redone without an error");
	CHECK(world.n_sub == 3 && lifecycle_n_active(&lc) == 3, "pending: one handover a record");
	h = handover_of(300);
	CHECK(h && h->trigger == WBG_TRIGGER_RECOVERED, "pending: its handover's trigger is recovered");
	CHECK(h && strcmp(h->path, "kubepods/pod-a") == 0, "pending: its handover has the record's cgroup path");
	CHECK(started(300, &k) == 1 && recorded_devs_are(k, devs_a, bdev_a, 2),
	      "pending: its plan is asked for the record's devices, a block device's own cache marked as such");
	CHECK(started(200, &k) == 1 && recorded_devs_are(k, devs_b, bdev_b, 1),
	      "pending: the other record's plan is its own devices");
	CHECK(n == 3 && covered[0] == 200 && covered[1] == 300 && covered[2] == 400,
	      "pending: the cgroups named returned, sorted");
	CHECK(!file_exists(state, "pending-5.json") && !file_exists(state, "pending-9.json") &&
		      !file_exists(state, "pending-7.json"),
	      "pending: each record dropped once redone");
	CHECK(file_exists(state, "handover-ids"), "pending: the state dir's other files kept");
	free(covered);
	covered = NULL;
	CHECK(recover_pending(&lc, state, &covered, &n) == 0 && n == 0 && world.n_sub == 3,
	      "pending: a second start finds nothing more to redo");
	trees_close();
}

static void test_pending_malformed(void)
{
	_cleanup_free_ uint64_t *covered = NULL;
	size_t n = 0;

	trees_open();
	save_record(4, "kubepods/pod-ok", 400);
	/* a record cut short (a crash mid-write of a hand-made copy), one
	 * without targets, one whose target has no minor */
	put_file(state, "pending-6.json", "{\"id\":6,\"cgroup\":\"kubepods/pod-cut\",\"cgrou");
	put_file(state, "pending-7.json", "{\"id\":7,\"cgroup\":\"kubepods/pod-bare\",\"cgroup_id\":700}");
	put_file(state, "pending-8.json",
		 "{\"id\":8,\"cgroup\":\"kubepods/pod-half\",\"cgroup_id\":800,\"targets\":[{\"major\":8}]}");
	/* not a record by its name: not read, not removed */
	put_file(state, "pending-9.json.tmp", "{");
	CHECK(recover_pending(&lc, state, &covered, &n) == 0, "malformed: no error for bad records");
	CHECK(world.n_sub == 1 && started(400, NULL) == 1, "malformed: the good record still redone");
	CHECK(started(700, NULL) == 0 && started(800, NULL) == 0, "malformed: no handover from a bad record");
	CHECK(n == 1 && covered[0] == 400, "malformed: only the good record's cgroup covered");
	CHECK(!file_exists(state, "pending-6.json"), "malformed: a truncated record removed, not read at every start");
	CHECK(!file_exists(state, "pending-7.json"), "malformed: a record without targets removed");
	CHECK(!file_exists(state, "pending-8.json"), "malformed: a record with a half target removed");
	CHECK(file_exists(state, "pending-9.json.tmp"), "malformed: a file not named like a record left alone");
	trees_close();
}

static void test_pending_errors(void)
{
	_cleanup_free_ uint64_t *covered = NULL;
	char p[160];
	size_t n = 7;

	trees_open();
	snprintf(p, sizeof(p), "%s/none", state);
	CHECK(recover_pending(&lc, p, &covered, &n) == 0 && covered && n == 0 && world.n_sub == 0,
	      "no state dir yet (first start): nothing redone, an empty set");
	free(covered);
	covered = NULL;
	put_file(state, "file", "");
	snprintf(p, sizeof(p), "%s/file", state);
	CHECK(recover_pending(&lc, p, &covered, &n) == -ENOTDIR && !covered,
	      "a state dir that is no directory: its error, no set");
	trees_close();
}

static void test_dying(void)
{
	const uint64_t covered[1] = { GONE_B };
	const dev_t sda[1] = { makedev(8, 0) };
	const bool fs[1] = { false };
	uint64_t live, nested, top, both[2];
	struct stat st;
	unsigned k = 0;

	trees_open();
	live = live_cgroup("live");
	top = live_cgroup("deep");
	nested = live_cgroup("deep/er");
	if (stat(cgroupfs, &st) < 0)
		abort();
	both[0] = live;
	both[1] = GONE_A;
	put_dirty_wbs("8:0", both, 2);
	put_dirty_wb("8:16", nested);
	put_dirty_wb("8:32", st.st_ino);
	put_dirty_wb("8:48", GONE_B);
	put_dirty_wb("8:64", top);
	CHECK(recover_dying(&lc, debugfs, NULL, cgroupfs, 0, covered, 1) == 0, "dying: wb_stats and cgroupfs read");
	CHECK(started(GONE_A, &k) == 1, "dying: a removed cgroup's dirty wb gets a handover");
	CHECK(handover_of(GONE_A) && handover_of(GONE_A)->trigger == WBG_TRIGGER_RECOVERED,
	      "dying: its trigger is recovered");
	CHECK(handover_of(GONE_A) && strcmp(handover_of(GONE_A)->path, "(removed while not watching)") == 0,
	      "dying: its path says it was removed while nothing watched");
	CHECK(recorded_devs_are(k, sda, fs, 1), "dying: its plan is the device its bdi is named by");
	CHECK(started(live, NULL) == 0 && started(top, NULL) == 0, "dying: a live cgroup's dirty wb gets none");
	CHECK(started(nested, NULL) == 0, "dying: a live cgroup below the top level gets none");
	CHECK(started(st.st_ino, NULL) == 0, "dying: the cgroupfs root's own wb gets none");
	CHECK(started(GONE_B, NULL) == 0, "dying: a cgroup a pending record named is not flushed twice");
	CHECK(world.n_sub == 1 && world.n_recorded == 1, "dying: nothing else started");
	trees_close();

	/* as deep as wbguardd tracks, no deeper: below max_depth a
	 * directory is not seen, and its wb reads as a dying cgroup's */
	trees_open();
	(void)live_cgroup("a");
	nested = live_cgroup("a/b");
	put_dirty_wb("8:0", nested);
	CHECK(recover_dying(&lc, debugfs, NULL, cgroupfs, 1, NULL, 0) == 0 && started(nested, NULL) == 1,
	      "dying: a cgroup below max_depth is not known live");
	trees_close();
}

static void test_dying_devices(void)
{
	dev_t devs[10];
	bool fs[10] = { false };
	uint64_t all = 0;
	unsigned k = 0;

	trees_open();
	/* bdis not named by a device number give nothing to open: a cgroup
	 * dirty only there gets no handover, one also on a device gets
	 * that device */
	put_dirty_wb("btrfs-1", GONE_A);
	put_dirty_wb("btrfs-2", GONE_B);
	put_dirty_wb("8:0", GONE_B);
	CHECK(recover_dying(&lc, debugfs, NULL, cgroupfs, 0, NULL, 0) == 0, "devices: read");
	CHECK(started(GONE_A, NULL) == 0, "devices: dirty on bdis named by no device: no handover");
	devs[0] = makedev(8, 0);
	CHECK(started(GONE_B, &k) == 1 && recorded_devs_are(k, devs, fs, 1),
	      "devices: of a named and an unnamed bdi, the named one planned");
	trees_close();
	/* btrfs' bdis in the table of named bdis: their filesystems' devices */
	trees_open();
	put_dirty_wb("btrfs-1", GONE_A);
	{
		struct wbg_named_bdis t = { .n = 1, .v = { { "btrfs-1", makedev(0, 33) } } };

		CHECK(recover_dying(&lc, debugfs, &t, cgroupfs, 0, NULL, 0) == 0, "btrfs: read");
	}
	devs[0] = makedev(0, 33);
	CHECK(started(GONE_A, &k) == 1 && recorded_devs_are(k, devs, fs, 1),
	      "btrfs: dirty only on btrfs-1, its filesystem (0:33) planned");
	trees_close();

	/* one handover holds 8 devices; a cgroup on 10: all 10 flushed,
	 * none twice */
	trees_open();
	for (unsigned i = 0; i < 10; i++) {
		char bdi[16];

		snprintf(bdi, sizeof(bdi), "9:%u", i);
		put_dirty_wb(bdi, GONE_A);
	}
	CHECK(recover_dying(&lc, debugfs, NULL, cgroupfs, 0, NULL, 0) == 0, "devices: ten bdis read");
	CHECK(world.n_recorded >= 1 && world.recorded[0].n == 8, "devices: a handover holds at most 8 devices");
	for (unsigned c = 0; c < world.n_recorded; c++)
		for (size_t i = 0; i < world.recorded[c].n; i++)
			all |= UINT64_C(1) << minor(world.recorded[c].devs[i]);
	CHECK(all == 0x3ff && world.n_recorded == 2 && world.recorded[1].n == 2,
	      "devices: the rest in one more handover, every device once");
	trees_close();
}

static void test_dying_unknown(void)
{
	char p[160];

	/* no wb_stats (before 6.10, or no debugfs): nothing to go by */
	trees_open();
	CHECK(recover_dying(&lc, debugfs, NULL, cgroupfs, 0, NULL, 0) == 0 && world.n_sub == 0,
	      "unknown: no wb_stats, no error and no handover");
	put_dirty_wb("8:0", GONE_A);
	snprintf(p, sizeof(p), "%s/none", root);
	CHECK(recover_dying(&lc, debugfs, NULL, p, 0, NULL, 0) < 0 && world.n_sub == 0,
	      "unknown: cgroupfs unreadable: an error, no wb taken for a dying cgroup's");
	trees_close();

	/* a bdi whose wb_stats cannot be read makes the whole answer
	 * unknown: no handover from the others' */
	trees_open();
	put_dirty_wb("8:0", GONE_A);
	put_file(debugfs, "bdi/8:16/wb_stats/x", "");
	CHECK(recover_dying(&lc, debugfs, NULL, cgroupfs, 0, NULL, 0) < 0 && world.n_sub == 0,
	      "unknown: an unreadable bdi: an error, no handover");
	trees_close();
}

/* The two in the daemon's order: a record's cgroup whose wb is still
 * dirty is redone once, as the record's. */
static void test_both(void)
{
	_cleanup_free_ uint64_t *covered = NULL;
	size_t n = 0;

	trees_open();
	save_record(3, "kubepods/pod-c", GONE_A);
	put_dirty_wb("8:0", GONE_A);
	put_dirty_wb("8:16", GONE_B);
	CHECK(recover_pending(&lc, state, &covered, &n) == 0 &&
		      recover_dying(&lc, debugfs, NULL, cgroupfs, 0, covered, n) == 0,
	      "both: redone in the daemon's order");
	CHECK(started(GONE_A, NULL) == 1 && strcmp(handover_of(GONE_A)->path, "kubepods/pod-c") == 0,
	      "both: a recorded cgroup's dirty wb redone once, as its record says");
	CHECK(started(GONE_B, NULL) == 1, "both: an unrecorded dying cgroup's still found");
	trees_close();
}

WORLD_MAIN(test_pending, test_pending_malformed, test_pending_errors, test_dying, test_dying_devices,
	   test_dying_unknown, test_both)
