/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-cgroup series of removed cgroups: their paths (for labels) kept
 * in the departed table (departed.h) until the kernel releases the cgroup
 * and the retention more, so that every scraper sees their final values;
 * then their BPF series and the names of the container that was in them go.
 * A timer ends them, never a reader.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "wbg-runtime.h"
#include "wbg-cgroup.h"

struct wbg_bpf;

struct wbg_series {
	struct wbg_departed departed;
	sd_event_source *timer; /* the next departed series due to go */
	uint64_t retention_usec;
	bool exported; /* a scrape or the textfile reads them; else they go at release */
	struct wbg_bpf *bpf;
	const struct wbg_registry *reg;
	struct wbg_containers *containers;
};

int series_start(struct wbg_series *s, sd_event *event, uint64_t retention_usec, bool exported, struct wbg_bpf *bpf,
		 const struct wbg_registry *reg, struct wbg_containers *containers);
void series_stop(struct wbg_series *s);
/* Removed: its path is kept for the series that outlive it. */
void series_departed(struct wbg_series *s, uint64_t id, const char *path);
/* The kernel released it (cgroup_release). */
void series_released(struct wbg_series *s, uint64_t id);
/* Removed and not yet released by the kernel: a dying memcg, whose wbs
 * may still hold inodes. */
bool series_cgroup_dying(const struct wbg_series *s, uint64_t id);
/* The path of a cgroup tracked now or removed lately, for labels; NULL if
 * unknown. */
const char *series_cgroup_path(const struct wbg_series *s, uint64_t id);
