/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A log line carries its level: "<N>" for the journal, the word elsewhere. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "tap.h"

/* stderr to a fresh file; JOURNAL_STREAM naming it when journal is set */
static FILE *capture(int journal)
{
	FILE *f = tmpfile();
	struct stat st;
	char env[64];

	if (!f || dup2(fileno(f), STDERR_FILENO) < 0 || fstat(STDERR_FILENO, &st) < 0)
		abort();
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	if (journal)
		setenv("JOURNAL_STREAM", env, 1);
	else
		unsetenv("JOURNAL_STREAM");
	return f;
}

static int holds(FILE *f, const char *want)
{
	char buf[512];
	size_t n;

	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	return strcmp(buf, want) == 0;
}

int main(void)
{
	int saved = dup(STDERR_FILENO), status = 0;
	FILE *f;
	pid_t pid;

	/* whether stderr is the journal is decided once per process, at its
	 * first line: that case in a child that has logged nothing before */
	pid = fork();
	if (pid == 0) {
		f = capture(1);
		log_notice("Reloaded");
		_exit(holds(f, "<5>Reloaded\n") ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	f = capture(0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "to the journal: \"<N>\", which journald turns into PRIORITY");
	log_warning("unknown key '%s'", "x");
	log_error_errno(ENOENT, "Cannot open %s", "/etc/x");
	log_debug("not shown at info");
	dup2(saved, STDERR_FILENO);
	CHECK(holds(f, "warning: unknown key 'x'\nerr: Cannot open /etc/x: No such file or directory\n"),
	      "off the journal: each line begins with its level's word");
	CHECK(strcmp(log_level_to_string(LOG_NOTICE), "notice") == 0 && strcmp(log_level_to_string(LOG_EMERG), "emerg") == 0,
	      "the words are [daemon] log_level's");
	fclose(f);

	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
