/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "records.h"

/* 0640: the records name every tenant's cgroups and pods; a file an older
 * version made 0644 is narrowed too. */
static FILE *open_records(const char *path, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0640);
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fchmod(fd, 0640) < 0 || !(f = fdopen(fd, flags & O_APPEND ? "a" : "w"))) {
		int e = errno;

		close(fd);
		errno = e;
		return NULL;
	}
	return f;
}

int records_open(struct wbg_records *r, const char *dir, uint64_t max)
{
	struct stat st;

	*r = (struct wbg_records){ .max = max };
	snprintf(r->path, sizeof(r->path), "%s/handovers.jsonl", dir);
	r->f = open_records(r->path, O_APPEND);
	if (!r->f)
		return log_warning_errno(errno, "Cannot open %s; handover records go to the log only", r->path);
	if (fstat(fileno(r->f), &st) == 0)
		r->size = (uint64_t)st.st_size;
	return 0;
}

static void rotate(struct wbg_records *r)
{
	char old[sizeof(r->path) + 2];

	snprintf(old, sizeof(old), "%s.1", r->path);
	fclose(r->f);
	r->f = NULL;
	if (rename(r->path, old) < 0)
		log_warning_errno(errno, "Cannot rotate %s", r->path);
	r->f = open_records(r->path, O_TRUNC);
	r->size = 0;
	r->rotations++;
	if (!r->f) {
		r->errors++;
		log_warning_errno(errno, "Cannot open %s again; handover records go to the log only", r->path);
		return;
	}
	if (r->rotations == 1)
		log_info("%s reached %llu bytes: the older records are in %s, the whole history in the journal", r->path,
			 (unsigned long long)r->max, old);
}

void records_append(struct wbg_records *r, const char *line)
{
	size_t len = strlen(line) + 1;

	if (!r->f)
		return;
	if (r->max && r->size > 0 && r->size + len > r->max)
		rotate(r);
	if (!r->f)
		return;
	if (fprintf(r->f, "%s\n", line) < 0 || fflush(r->f) != 0) {
		r->errors++;
		clearerr(r->f);
		return;
	}
	r->size += len;
	r->written++;
}

void records_close(struct wbg_records *r)
{
	if (r->f)
		fclose(r->f);
	r->f = NULL;
}

void records_metrics(FILE *f, const struct wbg_records *r)
{
	metric_counter(f, "wbguard_records_rotations_total",
		       "Times handovers.jsonl reached records_max_size and was rotated.", r->rotations);
	metric_counter(f, "wbguard_records_errors_total", "Handover records that could not be written to handovers.jsonl.",
		       r->errors);
}
