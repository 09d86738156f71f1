/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics textfile is written by its own thread: a writer stuck on a
 * stalled disk never blocks the caller (the event loop). The stall is a FIFO
 * in the temporary file's place: opening it for writing blocks until
 * someone reads, as a write to a hung disk would. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
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

	/* A stalled write: the thread is stuck opening the FIFO. */
	if (mkfifo(tmp, 0600) < 0)
		return 1;
	CHECK(textfile_new(&t) == 0, "new");
	textfile_submit(t, path, strdup("wbguard_x 2\n"));
	usleep(100 * 1000); /* the thread takes it and blocks in open() */
	textfile_submit(t, path, strdup("wbguard_x 3\n"));
	textfile_submit(t, path, strdup("wbguard_x 4\n"));
	CHECK(textfile_written(t) == 0, "submitting while the writer is stuck returns at once");
	CHECK(textfile_replaced(t) == 1, "a text not yet written is replaced by the newer one (counted)");
	fd = open(tmp, O_RDONLY | O_NONBLOCK); /* the disk comes back */
	textfile_free(t, 5000000);
	if (fd >= 0)
		close(fd);
	CHECK(strcmp(slurp(path), "wbguard_x 4\n") == 0, "the newest text ends up in the file: %s", slurp(path));

	/* Stuck for good at exit: free gives up after its wait. */
	unlink(path);
	if (mkfifo(tmp, 0600) < 0)
		return 1;
	CHECK(textfile_new(&t) == 0, "new");
	textfile_submit(t, path, strdup("wbguard_x 5\n"));
	textfile_free(t, 200000);
	CHECK(access(path, F_OK) != 0, "a writer stuck at exit is left behind, not waited for");
	fd = open(tmp, O_RDONLY | O_NONBLOCK); /* let the detached thread end */
	usleep(100 * 1000);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
