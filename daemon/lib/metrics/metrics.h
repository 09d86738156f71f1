/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus text exposition: metric families, escaped labels, histograms.
 * Names carry the wbguard_ prefix and base units; counters end in _total. */
#pragma once

#include <stddef.h>
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
/* A family with one unlabelled sample. */
void metric_counter(FILE *f, const char *name, const char *help, uint64_t v);
void metric_value(FILE *f, const char *name, const char *type, const char *help, double v);
/* One sample with one label (the value must need no escaping). */
void metric_labelled(FILE *f, const char *name, const char *label, const char *value, uint64_t v);
/* A label value, escaped as the format wants (\\, \", \n); bytes that are
 * not valid UTF-8 are written as \xNN so a scrape always parses. */
void metric_label_value(FILE *f, const char *v);
void metric_hist(FILE *f, const char *name, const struct wbg_hist *h);

/* Rows of one labelled family, written sorted with equal label sets summed:
 * two cgroups at one path (a dying one and its successor) make one series,
 * as they do in cAdvisor. */
struct metric_row {
	char *labels; /* 'a="x",b="y"', already escaped */
	double v;
};

struct metric_rows {
	struct metric_row *v;
	size_t n, cap;
};

int metric_rows_add(struct metric_rows *r, const char *labels, double v);
/* Writes "name{labels} v" lines and frees the rows. */
void metric_rows_write(FILE *f, const char *name, struct metric_rows *r);
void metric_rows_free(struct metric_rows *r);
