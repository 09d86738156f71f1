/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "escape.h"

size_t utf8_len(const unsigned char *s)
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

void fputs_escaped(const char *s, FILE *f)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_len(p);

		if (n == 0 || *p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\x%02x", *p);
			n = 1;
		} else
			fwrite(p, 1, n, f);
		p += n;
	}
}

char *escape_dup(const char *s)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	fputs_escaped(s, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *utf8_escape_dup(const char *s, bool json)
{
	const unsigned char *p = (const unsigned char *)s;
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	while (*p) {
		size_t k = utf8_len(p);

		if (k == 0) {
			fprintf(f, json ? "\\\\x%02x" : "\\x%02x", *p);
			k = 1;
		} else
			fwrite(p, 1, k, f);
		p += k;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
