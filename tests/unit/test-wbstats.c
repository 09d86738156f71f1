/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

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
	return tap_done();
}
