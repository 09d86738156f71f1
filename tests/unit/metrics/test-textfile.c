/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics textfile is written by its own thread: a writer stuck on a
 * stalled disk never blocks the caller (the event loop). The stall is a
 * writer that waits for a byte on a pipe, as a write to a hung disk waits
 * for the disk (the real writer never opens what is in its temporary's
 * place: test-cgroup-util). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wbg-base.h"
#include "tap.h"
#include "textfile.h"

static char *slurp(const char *p)
{
	static char buf[256];
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

static int disk[2] = { -1, -1 }, entered[2] = { -1, -1 };

/* the atomic write once the disk is back (a byte on the pipe); says when
 * it is stuck (a byte on entered), so the test waits for that, not for a
 * time a loaded machine may not keep */
static int stalled_write(const char *path, const char *text)
{
	char c, tmp[300];
	FILE *f;

	(void)!write(entered[1], "e", 1);
	if (read(disk[0], &c, 1) != 1)
		return -EIO;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	fclose(f);
	return rename(tmp, path) < 0 ? -errno : 0;
}

int main(void)
{
	char dir[] = "/tmp/wbg-textfile-XXXXXX", path[256], tmp[300], cmd[300];
	struct wbg_textfile *t;
	int fd;

	log_set_max_level(-1);
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/wbguard.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);

	CHECK(textfile_new(&t) == 0, "new");
	textfile_submit(t, path, strdup("wbguard_x 1\n"));
	textfile_free(t, 5000000);
	CHECK(strcmp(slurp(path), "wbguard_x 1\n") == 0, "written, atomically renamed into place");

	/* A stalled write: the thread is stuck in the disk's write. */
	if (pipe(disk) < 0 || pipe(entered) < 0)
		return 1;
	CHECK(textfile_new_with(stalled_write, &t) == 0, "new");
	textfile_submit(t, path, strdup("wbguard_x 2\n"));
	{
		char e;

		/* the thread takes it and blocks */
		CHECK(read(entered[0], &e, 1) == 1, "the writer is stuck in the disk's write");
	}
	textfile_submit(t, path, strdup("wbguard_x 3\n"));
	textfile_submit(t, path, strdup("wbguard_x 4\n"));
	CHECK(textfile_written(t) == 0, "submitting while the writer is stuck returns at once");
	CHECK(textfile_replaced(t) == 1, "a text not yet written is replaced by the newer one (counted)");
	fd = write(disk[1], "ab", 2); /* the disk comes back: both writes go through */
	textfile_free(t, 5000000);
	CHECK(strcmp(slurp(path), "wbguard_x 4\n") == 0, "the newest text ends up in the file: %s", slurp(path));

	/* Stuck for good at exit: free gives up after its wait. */
	unlink(path);
	CHECK(textfile_new_with(stalled_write, &t) == 0, "new");
	textfile_submit(t, path, strdup("wbguard_x 5\n"));
	textfile_free(t, 200000);
	CHECK(access(path, F_OK) != 0, "a writer stuck at exit is left behind, not waited for");
	fd = write(disk[1], "c", 1); /* let the detached thread end */
	usleep(100 * 1000);
	(void)fd;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
