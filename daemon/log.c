/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"

static int max_level = LOG_INFO;
static int to_journal = -1;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

/* systemd sets JOURNAL_STREAM=dev:ino of the stream it connected to stderr. */
static int stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return st.st_dev == dev && st.st_ino == ino;
}

int log_to_journal(void)
{
	if (to_journal < 0)
		to_journal = stderr_is_journal();
	return to_journal;
}

int log_internal(int level, int error, const char *fmt, ...)
{
	int saved = errno;
	char *msg = NULL;
	va_list ap;
	int k;

	if (error < 0)
		error = -error;
	if (level <= max_level) {
		if (log_to_journal())
			fprintf(stderr, "<%d>", level);
		va_start(ap, fmt);
		k = vasprintf(&msg, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start is just above */
		va_end(ap);
		/* one line per message whatever a cgroup's name holds */
		if (k >= 0)
			fputs_escaped(msg, stderr);
		free(msg);
		if (error)
			fprintf(stderr, ": %s", strerror(error));
		fputc('\n', stderr);
	}
	errno = saved;
	return -error;
}
