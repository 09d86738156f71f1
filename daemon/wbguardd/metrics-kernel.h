/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel's side of the metrics, from the BPF counters. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

struct wbg_bpf;
struct wbg_containers;
struct wbg_named_bdis;
struct wbg_series;

/* A cgroup path longer than this is no label value: its series are left
 * out (its counts stay in the node-wide totals). Kubernetes' longest,
 * a container's scope below its pod's slice, is about 180 bytes. */
#define WBG_LABEL_PATH_MAX 512

/* What the kernel's families read: the counters, and the names of the
 * cgroups they are about. */
struct wbg_kernel_view {
	const struct wbg_bpf *bpf; /* NULL: no kernel series */
	const struct wbg_series *series;
	const struct wbg_containers *containers;
	bool per_cgroup; /* [metrics] per_cgroup: the per-cgroup families at all */
	const char *debugfs; /* NULL: no wb_stats, no dying-wb gauges */
	const struct wbg_named_bdis *named; /* btrfs' bdis to their filesystems' devices */
	/* whether wbguardd watches that removed cgroup's dying wb now */
	bool (*watched)(const void *userdata, uint64_t cgroup_id);
	const void *watched_userdata;
	uint64_t *too_long; /* out: per-cgroup series left out of this scrape (path over WBG_LABEL_PATH_MAX) */
};

void metrics_write_kernel(FILE *f, const struct wbg_kernel_view *v);
