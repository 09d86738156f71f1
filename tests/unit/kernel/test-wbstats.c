/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "tap.h"
#include "wbstats.h"

/* As printed by 6.12's cgwb_debug_stats_show(). */
static const char text[] = "WbCgIno:                    1\n"
			   "WbWriteback:                0 kB\n"
			   "WbReclaimable:              0 kB\n"
			   "WbDirtyThresh:              0 kB\n"
			   "WbDirtied:             262144 kB\n"
			   "WbWritten:             262144 kB\n"
			   "WbWritebackBandwidth:  102400 kBps\n"
			   "b_dirty:                    0\n"
			   "b_io:                       0\n"
			   "b_more_io:                  0\n"
			   "b_dirty_time:               0\n"
			   "state:                      1\n"
			   "\n"
			   "WbCgIno:                 4242\n"
			   "WbWriteback:             1024 kB\n"
			   "WbReclaimable:          51200 kB\n"
			   "WbDirtyThresh:              0 kB\n"
			   "WbDirtied:              51200 kB\n"
			   "WbWritten:                  0 kB\n"
			   "WbWritebackBandwidth:  102400 kBps\n"
			   "b_dirty:                   17\n"
			   "b_io:                       0\n"
			   "b_more_io:                  0\n"
			   "b_dirty_time:               0\n"
			   "state:                      5\n"
			   "\n";

/* debugfs stand-in: <dir>/bdi/<bdi>/wb_stats holding text */
static void put_bdi(const char *dir, const char *bdi, const char *stats)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/bdi", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bdi/%s", dir, bdi);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bdi/%s/wb_stats", dir, bdi);
	f = fopen(p, "w");
	if (f) {
		fputs(stats, f);
		fclose(f);
	}
}

int main(void)
{
	struct wbg_wb_stat *v;
	size_t n;

	CHECK(wbstats_parse(text, &v, &n) == 0 && n == 2, "two wbs");
	CHECK(v[0].cg_ino == 1 && !wb_stat_has_dirty_io(&v[0]), "root wb clean");
	CHECK(v[1].cg_ino == 4242 && v[1].b_dirty == 17 && v[1].reclaimable_kb == 51200 && v[1].state == 5,
	      "second wb's fields");
	CHECK(wb_stat_has_dirty_io(&v[1]), "dirty IO from b_dirty and the state bit");
	free(v);
	CHECK(wbstats_parse("", &v, &n) == 0 && n == 0, "empty");
	free(v);
	CHECK(wbstats_cgroup_clean("/nonexistent", 1) < 0, "no debugfs: unknown");
	{
		/* a debugfs tree with two bdis: one read answers a batch */
		char dir[] = "/tmp/wbg-wbstats-XXXXXX", p[256];

		CHECK(mkdtemp(dir) != NULL, "temporary debugfs");
		put_bdi(dir, "8:0", text); /* 4242 dirty */
		put_bdi(dir, "8:16", "WbCgIno: 99\nb_dirty: 0\nb_io: 1\nstate: 1\n\nWbCgIno: 7\nb_dirty: 0\nstate: 1\n");
		{
			struct wbg_wb_census c = { 0 };

			CHECK(wbstats_census(dir, &c) == 0 && c.n_dirty == 2 && c.dirty[0] == 99 && c.dirty[1] == 4242,
			      "dirty set over both bdis, sorted");
			CHECK(wbstats_set_has(c.dirty, c.n_dirty, 4242) && !wbstats_set_has(c.dirty, c.n_dirty, 7) &&
				      !wbstats_set_has(c.dirty, c.n_dirty, 1),
			      "membership");
			CHECK(c.n_listed == 4 && c.listed[0] == 1 && c.listed[1] == 7 && c.listed[2] == 99 &&
				      c.listed[3] == 4242,
			      "listed: every wb, clean ones too (7: clean, inodes still attached)");
			CHECK(!wbstats_set_has(c.listed, c.n_listed, 8), "a cgroup with no wb listed: its inodes moved");
			wbstats_census_done(&c);
		}
		CHECK(wbstats_cgroup_clean(dir, 7) == 1 && wbstats_cgroup_clean(dir, 99) == 0, "one cgroup's answer");
		{
			struct wbg_dirty_wb *w = NULL;
			size_t nw = 0;
			bool a = false, b = false;

			put_bdi(dir, "btrfs-1", "WbCgIno: 55\nb_dirty: 3\nstate: 5\n");
			CHECK(wbstats_dirty_wbs(dir, NULL, &w, &nw) == 0 && nw == 3, "dirty wbs with their bdis");
			for (size_t i = 0; i < nw; i++) {
				a |= w[i].cg_ino == 4242 && w[i].has_dev && w[i].major == 8 && w[i].minor == 0;
				b |= w[i].cg_ino == 55 && !w[i].has_dev;
			}
			CHECK(a, "a bdi named by its device number");
			for (size_t i = 0; i < nw; i++)
				if (w[i].cg_ino == 4242)
					CHECK(w[i].dirty && w[i].dirty_bytes == (51200ULL + 1024) << 10, "its dirty bytes: WbReclaimable and WbWriteback");
			CHECK(b, "a bdi with another name, without a table of named bdis: no device");
			free(w);
			{
				/* btrfs-1 is the filesystem mounted from 0:33 */
				struct wbg_named_bdis t = { .n = 1, .v = { { "btrfs-1", makedev(0, 33) } } };

				b = false;
				CHECK(wbstats_dirty_wbs(dir, &t, &w, &nw) == 0 && nw == 3, "again, with a table of named bdis");
				for (size_t i = 0; i < nw; i++)
					b |= w[i].cg_ino == 55 && w[i].has_dev && w[i].major == 0 && w[i].minor == 33;
				CHECK(b, "btrfs' bdi: the device of the filesystem it names (0:33)");
				free(w);
			}
		}
		{
			/* a bdi that cannot be read: the answer is unknown, not a set
			 * without its dirty wbs (which would read as drained) */
			uint64_t failures = wbstats_read_failures;

			snprintf(p, sizeof(p), "%s/bdi/8:32", dir);
			mkdir(p, 0755);
			snprintf(p, sizeof(p), "%s/bdi/8:32/wb_stats", dir);
			CHECK(mkdir(p, 0755) == 0, "a bdi whose wb_stats is not readable (a directory)");
			struct wbg_wb_census c = { 0 };

			CHECK(wbstats_census(dir, &c) < 0 && wbstats_cgroup_clean(dir, 7) < 0,
			      "an unreadable bdi makes the read fail (unknown), not drained");
			CHECK(wbstats_read_failures > failures, "counted");
		}
		snprintf(p, sizeof(p), "rm -rf %s", dir);
		CHECK(system(p) == 0, "cleanup");
	}
	return tap_done();
}
