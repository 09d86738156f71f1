/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse-util.h"

int parse_u64_max(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long x;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno == ERANGE || x > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*ret = x;
	return 0;
}

int parse_size(const char *s, uint64_t *ret)
{
	static const struct {
		char c;
		unsigned shift;
	} units[] = { { 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 } };
	unsigned long long x;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (*end == units[i].c || *end == units[i].c + 32)
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		shift = units[i].shift;
		end++;
		if (strcasecmp(end, "iB") != 0 && strcasecmp(end, "B") != 0 && *end)
			return -EINVAL;
	}
	if (shift && x > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = (uint64_t)x << shift;
	return 0;
}

int parse_double(const char *s, double *ret)
{
	char *end;
	double x;

	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	x = strtod(s, &end);
	if (errno || *end || !isfinite(x))
		return -EINVAL;
	*ret = x;
	return 0;
}
