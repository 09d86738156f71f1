/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wbg-base.h"
#include "metrics.h"

void hist_init(struct wbg_hist *h, const double *bounds, unsigned n)
{
	*h = (struct wbg_hist){ .bounds = bounds, .n = n < WBG_HIST_MAX ? n : WBG_HIST_MAX };
}

void hist_observe(struct wbg_hist *h, double v)
{
	unsigned i;

	for (i = 0; i < h->n && v > h->bounds[i]; i++)
		;
	if (i < h->n)
		h->counts[i]++;
	h->count++;
	h->sum += v;
}

void metric_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metric_label_value(FILE *f, const char *v)
{
	const unsigned char *s = (const unsigned char *)v;

	while (*s) {
		size_t n = utf8_len(s);

		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (n == 0 || *s < 0x20) {
			fprintf(f, "\\\\x%02x", *s);
			n = 1;
		} else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
}

void metric_hist(FILE *f, const char *name, const struct wbg_hist *h)
{
	uint64_t cum = 0;

	for (unsigned i = 0; i < h->n; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
}

int metric_rows_add(struct metric_rows *r, const char *labels, double v)
{
	char *l;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 32;
		struct metric_row *nv = realloc(r->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		r->v = nv;
		r->cap = cap;
	}
	l = strdup(labels);
	if (!l)
		return -ENOMEM;
	r->v[r->n++] = (struct metric_row){ l, v };
	/* cppcheck-suppress memleak ; l is in r->v, freed by metric_rows_free */
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	return strcmp(((const struct metric_row *)a)->labels, ((const struct metric_row *)b)->labels);
}

void metric_rows_write(FILE *f, const char *name, struct metric_rows *r)
{
	if (r->n > 0) /* no rows: v is NULL, which qsort may not be given */
		qsort(r->v, r->n, sizeof(*r->v), cmp_rows);
	for (size_t i = 0; i < r->n; i++) {
		double v = r->v[i].v;

		while (i + 1 < r->n && strcmp(r->v[i + 1].labels, r->v[i].labels) == 0)
			v += r->v[++i].v;
		fprintf(f, "%s{%s} %.9g\n", name, r->v[i].labels, v);
	}
	metric_rows_free(r);
}

void metric_rows_free(struct metric_rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].labels);
	free(r->v);
	*r = (struct metric_rows){ 0 };
}

void metric_counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	metric_family(f, name, "counter", help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

void metric_value(FILE *f, const char *name, const char *type, const char *help, double v)
{
	metric_family(f, name, type, help);
	fprintf(f, "%s %.9g\n", name, v);
}

void metric_labelled(FILE *f, const char *name, const char *label, const char *value, uint64_t v)
{
	fprintf(f, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, value, v);
}
