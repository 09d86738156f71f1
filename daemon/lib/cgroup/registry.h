/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroups wbguardd tracks, by cgroup id, by path and by inotify watch. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup-identity.h"

struct wbg_handover;

struct wbg_cgroup {
	uint64_t id;   /* cgroupfs inode number = kernfs id = what BPF sees */
	char *path;    /* relative to the cgroupfs root, "" for the root */
	int wd_dir;    /* inotify watch of the directory, -1 if none */
	int wd_events; /* inotify watch of cgroup.events, -1 if none */
	bool populated;
	bool removed;
	bool in_scope;       /* in a configured subtree (not just an ancestor) */
	uint64_t seen;       /* rescan generation it was last found in */
	struct wbg_identity ident;
	struct wbg_handover *handover; /* the one in progress, if any */
	unsigned tenant_members; /* as a tenant's root: its tracked descendants */
	bool pooled;             /* its tracking drew on the pool of shares (share.h) */
	unsigned n_children;     /* tracked cgroups directly below it */
	struct wbg_cgroup *unit_next; /* other tracked cgroups named after the same unit */
	/* Without BPF: the filesystems its processes' mount namespace showed
	 * while they were alive. */
	dev_t *ns_devs;
	unsigned n_ns_devs;
};

struct wbg_registry {
	void *by_id, *by_path, *by_wd, *by_unit;
	size_t n;
	size_t n_unwatched; /* cgroups we could not put a watch on */
};

int registry_add(struct wbg_registry *r, uint64_t id, const char *path, struct wbg_cgroup **ret);
struct wbg_cgroup *registry_find_id(const struct wbg_registry *r, uint64_t id);
struct wbg_cgroup *registry_find_path(const struct wbg_registry *r, const char *path);
struct wbg_cgroup *registry_find_wd(const struct wbg_registry *r, int wd, bool *ret_is_events);
int registry_set_wd(struct wbg_registry *r, struct wbg_cgroup *c, bool events, int wd);
/* Drops the cgroup from every index and frees it. */
void registry_remove(struct wbg_registry *r, struct wbg_cgroup *c);
/* Whether a tracked cgroup is below path: O(the path). */
bool registry_has_children(const struct wbg_registry *r, const char *path);
/* The tracked cgroups whose last component is the systemd unit unit (a
 * list through unit_next): O(log n + their number). */
struct wbg_cgroup *registry_find_unit(const struct wbg_registry *r, const char *unit);
/* Calls f for each cgroup; f may not add or remove. */
void registry_foreach(const struct wbg_registry *r, void (*f)(struct wbg_cgroup *c, void *userdata), void *userdata);
void registry_free(struct wbg_registry *r);
