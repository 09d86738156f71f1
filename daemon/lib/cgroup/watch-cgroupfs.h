/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Watching cgroupfs with inotify: new and removed cgroup directories
 * (recursively) and each tracked cgroup's cgroup.events for the populated
 * 1 -> 0 change, the last moment before a runtime or systemd removes it.
 * A lost event (IN_Q_OVERFLOW) or a watch we could not add (the watch limit)
 * is answered by a rescan that reports what vanished, never by silence.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "registry.h"
#include "wbg-base.h"

struct wbg_watch;

struct wbg_watch_ops {
	void (*tracked)(struct wbg_watch *w, struct wbg_cgroup *c);
	void (*populated)(struct wbg_watch *w, struct wbg_cgroup *c, bool populated);
	/* c is removed from the registry right after this returns */
	void (*removed)(struct wbg_watch *w, struct wbg_cgroup *c, bool by_rescan);
};

struct wbg_watch {
	int fd;
	char *root;
	char **roots; /* subtrees in scope; none = everything */
	unsigned n_roots;
	char *exclude; /* our own scratch cgroup: its churn is ours, not news */
	struct wbg_registry *reg;
	const struct wbg_watch_ops *ops;
	void *userdata;
	uint64_t generation;
	/* counters */
	uint64_t overflows, watch_failures, rescans, rescan_removals;
	unsigned max_depth;      /* levels below the root tracked; 0: no bound */
	uint64_t paths_too_long; /* cgroups not tracked: path over PATH_MAX */
	uint64_t paths_too_deep; /* ... deeper than max_depth */
	bool too_long_logged;    /* said once per walk */
	/* Shares of what tenants can make it track ([daemon] max_cgroups,
	 * max_cgroups_per_tenant; 0: none; share.h): each tracked cgroup
	 * costs two inotify marks and about 1 KiB. A tenant is
	 * cgroup_tenant_len()'s subtree; what is refused is counted per
	 * attempt (a rescan tries again) and said once per walk. Set by
	 * watch_set_caps(). */
	struct wbg_share share;
	bool caps_logged;
	bool rescan_needed;   /* events were lost: rescan now */
	bool watch_limit_hit; /* some watches could not be added: retry later */
};

int watch_init(struct wbg_watch *w, const char *root, char *const *roots, unsigned n_roots, struct wbg_registry *reg,
	       const struct wbg_watch_ops *ops, void *userdata);
void watch_done(struct wbg_watch *w);
/* Before the first rescan. */
void watch_set_caps(struct wbg_watch *w, unsigned max_cgroups, unsigned max_per_tenant);
/* Walks the tree under the root, max_depth levels deep, and
 * tracks every cgroup in scope, reporting those that vanished since. */
int watch_rescan(struct wbg_watch *w);
/* Reads and dispatches pending inotify events, a bounded batch per call:
 * call again while the fd is readable. */
int watch_process(struct wbg_watch *w);
/* Whether the path is in one of the configured subtrees (or an ancestor
 * of one, which must be watched so the subtree's creation is seen). */
bool watch_in_scope(const struct wbg_watch *w, const char *path, bool *ret_ancestor_only);
/* The cgroup id of c's tenant root (c's own when it is one), 0 when c is
 * above every tenant or its root is not tracked. O(its path). */
uint64_t watch_tenant_id(const struct wbg_watch *w, const struct wbg_cgroup *c);
/* Its metric families: inotify overflows and refused watches, cgroups not
 * tracked (too deep, path too long), rescans, tracked cgroups. */
void watch_metrics(FILE *f, const struct wbg_watch *w);
