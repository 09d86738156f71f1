/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "macro.h"

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

int parse_bool(const char *v, bool *ret)
{
	static const char *const yes[] = { "1", "yes", "true", "on" }, *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return *ret = true, 0;
		if (strcasecmp(v, no[i]) == 0)
			return *ret = false, 0;
	}
	return -EINVAL;
}

int parse_uint(const char *v, unsigned min, unsigned max, unsigned *ret)
{
	uint64_t x;
	int r = parse_u64_max(v, max, &x);

	if (r < 0 || x < min)
		return r < 0 ? r : -ERANGE;
	*ret = (unsigned)x;
	return 0;
}

int parse_seconds(const char *v, double min, double max, uint64_t *ret_usec)
{
	/* the same units as [expiry]'s durations (parse_expiry) */
	static const struct {
		const char *unit;
		double secs;
	} units[] = { { "", 1 }, { "us", 1e-6 }, { "ms", 1e-3 }, { "cs", 1e-2 }, { "s", 1 }, { "m", 60 }, { "min", 60 }, { "h", 3600 } };
	char num[32];
	size_t n = strspn(v, "0123456789.");
	double secs;

	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, n);
	num[n] = 0;
	if (parse_double(num, &secs) < 0)
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (strcmp(v + n, units[i].unit) == 0) {
			secs *= units[i].secs;
			if (secs < min || secs > max)
				return -EINVAL;
			*ret_usec = (uint64_t)(secs * 1e6 + 0.5);
			return 0;
		}
	return -EINVAL;
}

int parse_listen(const char *v, struct sockaddr_storage *ret)
{
	struct sockaddr_storage ss = { 0 };
	char host[64];
	const char *colon;
	uint64_t port;

	if (v[0] == '[') {
		const char *end = strchr(v, ']');
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		if (!end || end[1] != ':' || (size_t)(end - v - 1) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(end - v - 1), v + 1);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		colon = end + 1;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		colon = strrchr(v, ':');
		if (!colon || (size_t)(colon - v) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - v), v);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
	}
	if (parse_u64_max(colon + 1, 65535, &port) < 0 || port == 0)
		return -EINVAL;
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
	if (ret)
		*ret = ss;
	return 0;
}
