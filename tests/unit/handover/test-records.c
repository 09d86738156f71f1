/* SPDX-License-Identifier: GPL-2.0-or-later */
/* handovers.jsonl is bounded: past its size it rotates to .1 (one old file
 * kept), so churn cannot fill /run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wbg-base.h"
#include "records.h"
#include "tap.h"

static unsigned mode_of(const char *dir, const char *name)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

static long long size_of(const char *dir, const char *name)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

int main(void)
{
	char dir[] = "/tmp/wbg-records-XXXXXX", line[200], cmd[300];
	struct wbg_records r;
	long long total = 0;

	log_set_max_level(-1);
	if (!mkdtemp(dir))
		return 1;
	memset(line, 'x', 99);
	line[99] = 0; /* 100 bytes a record with its newline */
	CHECK(records_open(&r, dir, 64 * 1024) == 0, "open");
	for (int i = 0; i < 10000; i++) /* 1 MB of records */
		records_append(&r, line);
	CHECK(r.written == 10000, "every record written (%llu)", (unsigned long long)r.written);
	CHECK(size_of(dir, "handovers.jsonl") <= 64 * 1024, "the file stays under its bound (%lld)",
	      size_of(dir, "handovers.jsonl"));
	CHECK(size_of(dir, "handovers.jsonl.1") > 0 && size_of(dir, "handovers.jsonl.1") <= 64 * 1024,
	      "one older file kept (%lld)", size_of(dir, "handovers.jsonl.1"));
	CHECK(r.rotations >= 14, "rotations counted (%llu)", (unsigned long long)r.rotations);
	total = size_of(dir, "handovers.jsonl") + size_of(dir, "handovers.jsonl.1");
	CHECK(total % 100 == 0, "records are never cut in two (%lld bytes)", total);
	CHECK(mode_of(dir, "handovers.jsonl") == 0640 && mode_of(dir, "handovers.jsonl.1") == 0640,
	      "0640, rotated files too (%o): they name every tenant's cgroups", mode_of(dir, "handovers.jsonl"));
	records_close(&r);
	/* a restart appends to what is there and counts its size */
	snprintf(cmd, sizeof(cmd), "%s/handovers.jsonl", dir);
	chmod(cmd, 0644); /* as an older version made it */
	CHECK(records_open(&r, dir, 64 * 1024) == 0 && r.size == (uint64_t)size_of(dir, "handovers.jsonl"),
	      "reopened: its size is known (%llu)", (unsigned long long)r.size);
	CHECK(mode_of(dir, "handovers.jsonl") == 0640, "a 0644 file from before is narrowed to 0640");
	records_close(&r);
	CHECK(records_open(&r, "/nonexistent/wbg", 64 * 1024) < 0, "no state directory: an error, not a crash");
	records_append(&r, line);
	CHECK(r.written == 0, "and nothing written");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
