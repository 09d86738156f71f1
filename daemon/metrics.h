/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus text exposition: metric families, escaped labels, histograms.
 * Names carry the wbguard_ prefix and base units; counters end in _total. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#define WBG_HIST_MAX 16

struct wbg_hist {
	const double *bounds; /* upper bounds, ascending, in base units */
	unsigned n;
	uint64_t counts[WBG_HIST_MAX]; /* per bucket, not cumulative */
	uint64_t count;
	double sum;
};

void hist_init(struct wbg_hist *h, const double *bounds, unsigned n);
void hist_observe(struct wbg_hist *h, double v);

void metric_family(FILE *f, const char *name, const char *type, const char *help);
/* A label value, escaped as the format wants (\\, \", \n); bytes that are
 * not valid UTF-8 are written as \xNN so a scrape always parses. */
void metric_label_value(FILE *f, const char *v);
void metric_hist(FILE *f, const char *name, const struct wbg_hist *h);
