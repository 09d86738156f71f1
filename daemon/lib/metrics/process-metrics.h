/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The standard process_* families (as Prometheus client libraries name
 * them) and wbguard_build_info, from /proc. */
#pragma once

#include <stdint.h>
#include <stdio.h>

struct process_stat {
	uint64_t utime_ticks, stime_ticks, start_ticks, vsize_bytes, rss_pages;
};

/* /proc/PID/stat's text (the name in parentheses may hold anything, so
 * fields are counted from its last ')'). -EINVAL if it is not that. */
int process_stat_parse(const char *text, struct process_stat *ret);
/* The process_* families; proc: "/proc" (or a test's tree). Only on
 * wbguardd's own endpoint: node_exporter has its own process_*. */
void process_metrics(FILE *f, const char *proc);
/* wbguard_build_info; version: the build's. */
void build_info_metric(FILE *f, const char *version);
