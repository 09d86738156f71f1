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

const char *log_level_to_string(int level)
{
	static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

	return level >= 0 && level <= LOG_DEBUG ? names[level] : "debug";
}

int log_internal(int level, int error, const char *fmt, ...)
{
	int saved = errno;
	char *msg = NULL, *line = NULL;
	size_t len = 0;
	va_list ap;
	FILE *f;
	int k;

	if (error < 0)
		error = -error;
	if (level > max_level) {
		errno = saved;
		return -error;
	}
	va_start(ap, fmt);
	k = vasprintf(&msg, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start is just above */
	va_end(ap);
	/* The line is made in memory and written with one write(): stderr is
	 * unbuffered, and escaping character by character cost a system call
	 * per character (a handover's line was hundreds; measured under churn
	 * as most of the event loop's time). One write also keeps the worker
	 * threads' lines whole. */
	f = open_memstream(&line, &len);
	if (f) {
		/* the journal takes the level from "<N>"; anywhere else (a
		 * terminal, a pod's log, a file) the reader needs the word, the
		 * one [daemon] log_level takes */
		if (log_to_journal())
			fprintf(f, "<%d>", level);
		else
			fprintf(f, "%s: ", log_level_to_string(level));
		/* one line per message whatever a cgroup's name holds */
		if (k >= 0)
			fputs_escaped(msg, f);
		if (error)
			fprintf(f, ": %s", strerror(error));
		fputc('\n', f);
		if (fclose(f) == 0)
			(void)!write(STDERR_FILENO, line, len);
		free(line);
	}
	free(msg);
	errno = saved;
	return -error;
}
