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
