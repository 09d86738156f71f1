/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "parse-util.h"
#include "tap.h"

int main(void)
{
	static const struct {
		const char *in;
		int r;
		uint64_t v;
	} sizes[] = {
		{ "0", 0, 0 },		 { "512", 0, 512 },	       { "64K", 0, 64 << 10 },
		{ "256M", 0, 256ULL << 20 }, { "4G", 0, 4ULL << 30 },    { "1TiB", 0, 1ULL << 40 },
		{ "2g", 0, 2ULL << 30 },	 { "3MB", 0, 3ULL << 20 },	 { "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },	 { "12X", -EINVAL, 0 },	       { "1Mx", -EINVAL, 0 },
		{ "99999999999T", -ERANGE, 0 }, { "M", -EINVAL, 0 },
	};
	uint64_t v;
	double d;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int r = parse_size(sizes[i].in, &v);

		CHECK(r == sizes[i].r && (r < 0 || v == sizes[i].v), "parse_size(\"%s\")", sizes[i].in);
	}
	CHECK(parse_u64_max("2", 2, &v) == 0 && v == 2, "u64 at the bound");
	CHECK(parse_u64_max("3", 2, &v) == -ERANGE, "u64 above the bound");
	CHECK(parse_u64_max("2 ", 9, &v) == -EINVAL, "u64 with trailing junk");
	CHECK(parse_u64_max("+2", 9, &v) == -EINVAL, "u64 with a sign");
	CHECK(parse_double("2.5", &d) == 0 && d == 2.5, "double with fraction");
	CHECK(parse_double(".5", &d) == 0 && d == 0.5, "double with leading dot");
	CHECK(parse_double("-1", &d) == -EINVAL, "negative double");
	CHECK(parse_double("nan", &d) == -EINVAL, "nan");
	CHECK(parse_double("1e999", &d) == -EINVAL, "overflowing double");

	bool b = false;
	unsigned u = 0;
	struct sockaddr_storage ss;

	CHECK(parse_bool("Yes", &b) == 0 && b, "bool yes, any case");
	CHECK(parse_bool("off", &b) == 0 && !b, "bool off");
	CHECK(parse_bool("y", &b) == -EINVAL, "bool: only the words");
	CHECK(parse_uint("4", 1, 8, &u) == 0 && u == 4, "uint in range");
	CHECK(parse_uint("0", 1, 8, &u) == -ERANGE && u == 4, "uint below min: -ERANGE, unchanged");
	CHECK(parse_seconds("0.25", 0, 10, &v) == 0 && v == 250000, "seconds to usec");
	CHECK(parse_seconds("11", 0, 10, &v) == -EINVAL, "seconds above max");
	CHECK(parse_seconds("500ms", 0, 10, &v) == 0 && v == 500000, "a duration in ms");
	CHECK(parse_seconds("2m", 0, 600, &v) == 0 && v == 120000000, "a duration in minutes");
	CHECK(parse_seconds("1h", 0, 86400, &v) == 0 && v == 3600000000ULL, "a duration in hours");
	CHECK(parse_seconds("0.1", 0, 10, &v) == 0 && v == 100000, "0.1 s is 100000 us, not 99999");
	CHECK(parse_seconds("5 s", 0, 10, &v) == -EINVAL && parse_seconds("5sec", 0, 10, &v) == -EINVAL &&
		      parse_seconds("s", 0, 10, &v) == -EINVAL && parse_seconds("-1", 0, 10, &v) == -EINVAL,
	      "junk, a unit alone or a sign: refused");
	CHECK(parse_seconds("2m", 0, 60, &v) == -EINVAL, "a duration above max in another unit");
	CHECK(parse_listen("127.0.0.1:9573", &ss) == 0 && ss.ss_family == AF_INET &&
		      ntohs(((struct sockaddr_in *)&ss)->sin_port) == 9573,
	      "listen v4");
	CHECK(parse_listen("[::1]:80", &ss) == 0 && ss.ss_family == AF_INET6, "listen v6");
	CHECK(parse_listen("localhost:80", NULL) == -EINVAL, "listen: numeric hosts only");
	CHECK(parse_listen("127.0.0.1:0", NULL) == -EINVAL, "listen: port 0");
	CHECK(parse_listen("[::1]80", NULL) == -EINVAL, "listen: v6 without colon");
	return tap_done();
}
