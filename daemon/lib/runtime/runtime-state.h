/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A container's annotations from its OCI runtime's state, found by cgroup:
 * crun keeps <root>/<id>/status ("cgroup-path") beside a copy of the bundle's
 * config.json ("annotations"); runc keeps <root>/<id>/state.json
 * (config.cgroups.path or cgroup_paths[""], and the annotations as
 * config.labels "key=value"). Roots are given, so tests use fixtures.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct wbg_container_state {
	char id[128];
	char runtime[8]; /* "crun", "runc" */
	char bundle[256];
	struct json_object *annotations; /* an object; owned, put it with runtime_state_done() */
	char *cgroup; /* relative to the cgroupfs root, no leading or trailing '/'; owned */
};

/* Reads one container's state, <dirfd>/<id> in a runtime's root: 1 and
 * *ret when it holds crun's or runc's, 0 when neither (not yet written),
 * negative on errors. */
int runtime_state_read(int dirfd, const char *id, const char *cgroup_root, struct wbg_container_state *ret);

/* Looks in every root for the container whose cgroup is path (relative to
 * the cgroupfs mounted at cgroup_root, with or without a leading '/').
 * Returns 1 and fills *ret when found, 0 when not, negative on errors. */
int runtime_state_find(const char *const *roots, size_t n_roots, const char *cgroup_root, const char *path,
		       struct wbg_container_state *ret);
/* The annotation's value, or NULL. */
const char *runtime_state_annotation(const struct wbg_container_state *s, const char *key);
void runtime_state_done(struct wbg_container_state *s);
