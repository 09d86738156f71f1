/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cgroups that were removed but whose per-cgroup series may still grow: a
 * removed memcg lingers as a dying one, and the kernel's foreign flushes to
 * it (the stall) come after the removal. Their paths are kept for metric
 * labels until the kernel releases the cgroup and a fixed time more (the
 * retention, a few scrape intervals), so that every scraper sees the final
 * values; then the series and the entry go. Time, not a scrape, ends them:
 * reading changes nothing. Bounded: the oldest entry makes room for a new
 * one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wbg-base.h"

struct wbg_departed_entry {
	uint64_t id;
	char *path; /* relative to the cgroupfs root */
	bool released;
	uint64_t released_usec; /* CLOCK_MONOTONIC, when released */
};

struct wbg_departed {
	void *by_id;          /* tsearch tree */
	struct wbg_ring ring; /* in arrival order, for eviction */
};

int departed_init(struct wbg_departed *d, size_t cap);
void departed_free(struct wbg_departed *d);
/* Adds (or keeps) the entry; with the table full, the oldest goes first and
 * its id is returned in *ret_evicted (0 if none) so its series can go too. */
int departed_add(struct wbg_departed *d, uint64_t id, const char *path, uint64_t *ret_evicted);
const struct wbg_departed_entry *departed_find(const struct wbg_departed *d, uint64_t id);
/* The kernel released the cgroup at now: returns 1 if it was known, 0 if
 * not. */
int departed_mark_released(struct wbg_departed *d, uint64_t id, uint64_t now);
/* Removes every entry released at or before cutoff, calling f with each id
 * first (to drop its series). Returns how many went; *ret_next is the
 * earliest release time of those left (0 if none). */
size_t departed_drop_released(struct wbg_departed *d, uint64_t cutoff, void (*f)(uint64_t id, void *userdata),
			      void *userdata, uint64_t *ret_next);
