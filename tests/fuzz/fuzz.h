/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer entry point; inputs become NUL-terminated strings where the
 * parser takes text. */
#pragma once

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = 0;
	}
	return s;
}

/* Writes an input to dir/name (targets whose parsers read files). */
static inline void fuzz_put_file(const char *dir, const char *name, const uint8_t *data, size_t size)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

/* A temporary directory for the whole run, removed at exit (libFuzzer has
 * no teardown). tmpl: "/tmp/NAME-XXXXXX", filled in. */
static char *fuzz_tmp_dir_path;

static inline void fuzz_tmp_dir_remove(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_tmp_dir_path);
	(void)!system(cmd);
}

static inline void fuzz_tmp_dir(char *tmpl)
{
	if (!mkdtemp(tmpl))
		abort();
	fuzz_tmp_dir_path = tmpl;
	atexit(fuzz_tmp_dir_remove);
}
