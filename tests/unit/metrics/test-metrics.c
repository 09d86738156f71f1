/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "tap.h"

static void label(FILE *f, const void *v)
{
	metric_label_value(f, v);
}

static void hist(FILE *f, const void *h)
{
	metric_hist(f, "wbguard_test_seconds", h);
}

static void rows(FILE *f, const void *r)
{
	metric_rows_write(f, "wbguard_test_total", (struct metric_rows *)r);
}

int main(void)
{
	struct metric_rows r = { 0 };
	static const double b[] = { 0.001, 0.01, 0.1 };
	struct wbg_hist h;
	char *s;

	s = tap_render(label, "system.slice/a b.service");
	CHECK(strcmp(s, "system.slice/a b.service") == 0, "plain value unchanged");
	free(s);
	s = tap_render(label, "x\"y\\z\nw");
	CHECK(strcmp(s, "x\\\"y\\\\z\\nw") == 0, "quote, backslash, newline escaped: %s", s);
	free(s);
	s = tap_render(label, "caf\xc3\xa9/\xff\xfe");
	CHECK(strcmp(s, "caf\xc3\xa9/\\\\xff\\\\xfe") == 0, "UTF-8 kept, invalid bytes as \\\\xNN: %s", s);
	free(s);

	s = tap_render(rows, &r);
	CHECK(s && *s == 0, "no rows: nothing written (and qsort never sees NULL)");
	free(s);

	hist_init(&h, b, 3);
	hist_observe(&h, 0.0005);
	hist_observe(&h, 0.005);
	hist_observe(&h, 0.005);
	hist_observe(&h, 5);
	s = tap_render(hist, &h);
	CHECK(strstr(s, "wbguard_test_seconds_bucket{le=\"0.001\"} 1\n") && strstr(s, "{le=\"0.01\"} 3\n") &&
		      strstr(s, "{le=\"0.1\"} 3\n") && strstr(s, "{le=\"+Inf\"} 4\n") &&
		      strstr(s, "wbguard_test_seconds_count 4\n"),
	      "cumulative buckets, +Inf, count:\n%s", s);
	free(s);

	metric_rows_add(&r, "id=\"/b\"", 2);
	metric_rows_add(&r, "id=\"/a\"", 1);
	metric_rows_add(&r, "id=\"/b\"", 3); /* a successor at the same path */
	s = tap_render(rows, &r);
	CHECK(strcmp(s, "wbguard_test_total{id=\"/a\"} 1\nwbguard_test_total{id=\"/b\"} 5\n") == 0,
	      "rows sorted, equal label sets summed into one series:\n%s", s);
	CHECK(r.n == 0 && r.v == NULL, "rows freed after writing");
	free(s);
	return tap_done();
}
