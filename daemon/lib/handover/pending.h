/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Handovers in flight, on disk: a flush that a SIGKILL (or a crash)
 * interrupted is not forgotten. Each handover with targets writes
 * <state_dir>/pending-<id>.json before its first flush and removes it when
 * it ends; a new wbguardd flushes what it finds there again, since the
 * cgroup may still be dying with its data dirty (and after rmdir nothing
 * else would tell it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wbg_pending {
	uint64_t id, cgroup_id;
	char *path;
	dev_t *devs;
	bool *bdev; /* per dev: a block device's own page cache, not a filesystem */
	size_t n;
};

int pending_save(const char *dir, uint64_t id, const char *path, uint64_t cgroup_id, const dev_t *devs,
		 const bool *bdev, size_t n);
void pending_drop(const char *dir, uint64_t id);
/* Every record left in dir (malformed ones are removed and skipped); the
 * files stay until pending_drop. */
int pending_load(const char *dir, struct wbg_pending **ret, size_t *ret_n);
void pending_free(struct wbg_pending *p, size_t n);
/* The highest id of the records in dir (by file name), 0 if none. */
uint64_t pending_max_id(const char *dir);

/* Handover ids go on across restarts, so that a record, a log line and a
 * pending file name one handover only: <dir>/handover-ids holds the end of
 * the block of ids a run has reserved, written before any id of the block
 * is used. */
#define WBG_IDS_BLOCK 4096
/* Ids stay exact in JSON's doubles (2^53); a pending file's name or a
 * reservation above it (a hand-made file) is ignored, never wraps ids. */
#define WBG_IDS_MAX (1ULL << 53)
struct wbg_ids {
	char path[4096];
	uint64_t last, reserved; /* the last id given; ids up to reserved are ours */
	uint64_t errors;         /* reservations that could not be saved */
};
/* floor: the highest id known to be taken (pending records). */
void ids_open(struct wbg_ids *ids, const char *dir, uint64_t floor);
uint64_t ids_next(struct wbg_ids *ids);
