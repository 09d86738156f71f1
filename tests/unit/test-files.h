/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Temporary trees for the unit tests: a file written whole below dir
 * (cgroupfs, /proc/sys, debugfs or a configuration stand-in). */
#pragma once

#include <stdio.h>
#include <stdlib.h>

static inline void test_put(const char *dir, const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "we");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}
