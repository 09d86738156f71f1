/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The runtimes' container states by cgroup, cached: looking a cgroup up
 * costs a stat of each runtime root and one search, whatever the number of
 * containers. A root is listed again only when its directory changed (its
 * mtime; or while that is too recent to trust), and a container's state is
 * parsed once, and again only while it was not written yet (runc writes
 * state.json after its init joined the cgroup). Without it, each lookup of
 * a cgroup that is no container parsed every container's state: 7.8 ms
 * with 300 containers, for every cgroup a tenant populates.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime-state.h"

struct runtime_index;

int runtime_index_new(struct runtime_index **ret);
void runtime_index_free(struct runtime_index *x);
/* As runtime_state_find(): 1 and *ret (its own copy: runtime_state_done()
 * it) when a container's cgroup is path, 0 when none is. */
int runtime_index_find(struct runtime_index *x, const char *const *roots, size_t n_roots, const char *cgroup_root,
		       const char *path, struct wbg_container_state *ret);

struct runtime_index_stats {
	uint64_t lookups, listings, parses;
	size_t containers;
};
void runtime_index_stats(const struct runtime_index *x, struct runtime_index_stats *ret);
