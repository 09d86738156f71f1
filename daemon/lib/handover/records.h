/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * <state_dir>/handovers.jsonl: the recent handover records, one JSON line
 * each. The state dir is in /run (RAM), so the file is bounded: past its
 * size it becomes handovers.jsonl.1 (replacing the older one) and a new one
 * starts. The whole history is in the journal (one entry a handover, with
 * WBGUARD_* fields).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

struct wbg_records {
	char path[4096];
	FILE *f;
	uint64_t size, max; /* bytes in the current file; rotate past max */
	/* counters */
	uint64_t written, rotations, errors;
};

/* Opens (appends to) <dir>/handovers.jsonl; max 0 = unbounded. */
int records_open(struct wbg_records *r, const char *dir, uint64_t max);
/* One line (without its newline); rotates first when it would not fit. */
void records_append(struct wbg_records *r, const char *line);
void records_close(struct wbg_records *r);
/* Its metric families (wbguard_records_*). */
void records_metrics(FILE *f, const struct wbg_records *r);
