/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal TAP output for meson's 'tap' protocol: one "ok N - name" per check. */
#pragma once

#include <math.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		int _ok_ = !!(cond);                                           \
		printf("%s %d - ", _ok_ ? "ok" : "not ok", ++tap_n);          \
		printf(__VA_ARGS__);                                           \
		if (!_ok_) {                                                   \
			printf(" (%s:%d: %s)", __FILE__, __LINE__, #cond);     \
			tap_failed++;                                          \
		}                                                              \
		putchar('\n');                                                 \
	} while (0)

/* What fn writes to a FILE, as a string (free it). */
static inline char *tap_render(void (*fn)(FILE *, const void *), const void *arg)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	fn(f, arg);
	fclose(f);
	return buf;
}

/* A check that cannot run here: TAP's SKIP directive, counted as skipped,
 * never as passed. */
#define SKIP(...)                                                              \
	do {                                                                   \
		printf("ok %d - # SKIP ", ++tap_n);                            \
		printf(__VA_ARGS__);                                           \
		putchar('\n');                                                 \
	} while (0)

#define CHECK_NEAR(a, b, eps, ...) CHECK(fabs((double)(a) - (double)(b)) <= (eps), __VA_ARGS__)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
