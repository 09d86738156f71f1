/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

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

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0 && s[0] >= 0xc2 && (s[1] & 0xc0) == 0x80)
		return 2;
	if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80)
		return 3;
	if ((s[0] & 0xf8) == 0xf0 && s[0] <= 0xf4 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
	    (s[3] & 0xc0) == 0x80)
		return 4;
	return 0;
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
