/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The dying-wb gauges (metrics-kernel.c) over a pretend debugfs: the bytes
 * of wbs whose cgroup was removed and not released, per device, and per
 * removed cgroup while it is watched; nothing of live or released cgroups;
 * no family where wb_stats cannot say. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wbg-cgroup.h"
#include "wbg-runtime.h"
#include "series.h"
#include "metrics-kernel.h"
#include "tap.h"
#include "test-files.h"

static bool watched(const void *u, uint64_t id)
{
	return id == 42;
}

static void write_kernel(FILE *f, const void *v)
{
	metrics_write_kernel(f, v);
}

static char *scrape(const struct wbg_kernel_view *v)
{
	return tap_render(write_kernel, v);
}

int main(void)
{
	char dir[] = "/tmp/wbg-dying-XXXXXX", p[256];
	struct wbg_registry reg = { 0 }; /* no live cgroups tracked */
	struct wbg_series s = { .reg = &reg };
	struct wbg_containers c;
	struct wbg_kernel_view v = { .series = &s, .containers = &c, .per_cgroup = true, .watched = watched };
	uint64_t evicted;
	char *out;

	CHECK(mkdtemp(dir) != NULL, "a pretend debugfs");
	CHECK(departed_init(&s.departed, 16) == 0 && containers_init(&c, 16) == 0, "the tables");
	/* 42 and 43 removed, 44 removed and released, 45 live (not departed) */
	departed_add(&s.departed, 42, "kubepods/pod-a/ctr-old", &evicted);
	departed_add(&s.departed, 43, "kubepods/pod-b/ctr-old", &evicted);
	departed_add(&s.departed, 44, "kubepods/pod-c/ctr-old", &evicted);
	departed_mark_released(&s.departed, 44, 1);
	snprintf(p, sizeof(p), "%s/bdi", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bdi/8:0", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bdi/253:1", dir);
	mkdir(p, 0755);
	test_put(dir, "bdi/8:0/wb_stats", "WbCgIno: 1\nWbReclaimable: 999 kB\nb_dirty: 3\nstate: 5\n\n"
		      "WbCgIno: 42\nWbWriteback: 1024 kB\nWbReclaimable: 3072 kB\nb_dirty: 2\nstate: 5\n\n"
		      "WbCgIno: 43\nWbReclaimable: 1024 kB\nb_dirty: 1\nstate: 5\n\n"
		      "WbCgIno: 44\nWbReclaimable: 7 kB\nb_dirty: 1\nstate: 5\n\n"
		      "WbCgIno: 45\nWbReclaimable: 5 kB\nb_dirty: 1\nstate: 5\n\n");
	test_put(dir, "bdi/253:1/wb_stats", "WbCgIno: 42\nWbReclaimable: 8 kB\nb_dirty: 1\nstate: 5\n\nWbCgIno: 43\nb_dirty: 0\nstate: 1\n\n");

	out = scrape(&v);
	CHECK(!strstr(out, "wbguard_dying_wb_dirty_bytes"), "no debugfs: no dying-wb family");
	free(out);
	v.debugfs = dir;
	out = scrape(&v);
	CHECK(strstr(out, "wbguard_dying_wb_dirty_bytes{device=\"8:0\"} 5242880\n") != NULL,
	      "per device: the removed cgroups' dirty and writeback bytes, summed (4 MiB + 1 MiB)");
	CHECK(strstr(out, "wbguard_dying_wb_dirty_bytes{device=\"253:1\"} 8192\n") != NULL,
	      "per device: another device's own");
	CHECK(strstr(out, "wbguard_cgroup_dying_wb_dirty_bytes{id=\"/kubepods/pod-a/ctr-old\",pod=\"\",namespace=\"\","
			  "container=\"\"} 4202496\n") != NULL,
	      "per watched removed cgroup, over its devices, with the four labels");
	CHECK(!strstr(out, "pod-b"), "a removed cgroup not watched: in its device's sum only");
	CHECK(!strstr(out, "pod-c") && !strstr(out, "} 7168\n"), "released: not dying, not counted");
	CHECK(!strstr(out, "1022976") && !strstr(out, "5120\n"), "the root's and a live cgroup's wbs are not counted");
	free(out);
	v.per_cgroup = false;
	out = scrape(&v);
	CHECK(strstr(out, "wbguard_dying_wb_dirty_bytes{device=\"8:0\"}") && !strstr(out, "wbguard_cgroup_dying"),
	      "[metrics] per_cgroup = no: the per-device family only");
	free(out);
	departed_free(&s.departed);
	containers_free(&c);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK(system(p) == 0, "cleanup");
	return tap_done();
}
