/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "tap.h"

static int is(const char *in, const char *want)
{
	char *got = escape_dup(in);
	int ok = got && strcmp(got, want) == 0;

	free(got);
	return ok;
}

int main(void)
{
	CHECK(is("kubepods.slice/pod-1", "kubepods.slice/pod-1"), "a plain name is unchanged");
	CHECK(is("a b", "a b"), "a space stays");
	CHECK(is("new\nline", "new\\x0aline"), "a newline cannot split a log line");
	CHECK(is("tab\there\x1b[31m", "tab\\x09here\\x1b[31m"), "control characters, an escape sequence too");
	CHECK(is("\xff\xfe", "\\xff\\xfe"), "bytes that are not UTF-8");
	CHECK(is("caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"), "valid UTF-8 stays");
	CHECK(is("\xc3", "\\xc3"), "a cut-off UTF-8 sequence");
	CHECK(is("\x7f", "\\x7f"), "DEL");
	{
		char *a = utf8_escape_dup("bad\xff/ok\ttab caf\xc3\xa9", false);
		char *b = utf8_escape_dup("{\"cgroup\":\"bad\xff\"}", true);

		CHECK(a && strcmp(a, "bad\\xff/ok\ttab caf\xc3\xa9") == 0,
		      "for D-Bus: only bytes that are not UTF-8 escaped (a tab and UTF-8 stay)");
		CHECK(b && strcmp(b, "{\"cgroup\":\"bad\\\\xff\"}") == 0, "in a JSON text: escaped so that it stays JSON");
		free(a);
		free(b);
	}
	return tap_done();
}
