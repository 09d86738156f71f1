/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an OCI hook is handed: the container's state on stdin (runtime-spec
 * "State": ociVersion, id, status, pid, bundle, annotations) and, in the
 * bundle, config.json (linux.cgroupsPath, mounts, annotations). Parsed with
 * json-c, every field checked: the input comes from whoever can start a
 * container, and what it names must stay that container's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define OCI_STATE_MAX (1024 * 1024)   /* a state is a few hundred bytes */
#define OCI_CONFIG_MAX (4 * 1024 * 1024)
#define OCI_MOUNTS_MAX 256

struct json_object;

struct oci_state {
	char id[256];
	char status[16];
	int pid;            /* 0 when absent (poststop: the process is gone) */
	char bundle[4096];  /* absolute */
	struct json_object *annotations; /* an object, owned; never NULL after a successful parse */
};

struct oci_mount {
	char *destination;
	char *source;
	char *type;
	bool rw; /* not "ro" in its options */
	bool bind;
};

struct oci_config {
	char cgroups_path[4096]; /* linux.cgroupsPath as given, "" when absent */
	char root_path[4096];    /* root.path as given (absolute, or relative to the bundle), "" when absent */
	struct oci_mount mounts[OCI_MOUNTS_MAX];
	size_t n_mounts;
	struct json_object *annotations;
};

/* Each returns 0, or an error with err naming the field ("state: 'bundle'
 * must be an absolute path"): -EINVAL for malformed input, -E2BIG for a
 * valid config.json beyond what the hook reads (its size, more than
 * OCI_MOUNTS_MAX mounts, a path of 4096 bytes or more or with control
 * characters), which the hook logs and skips rather than failing. */
int oci_state_parse(const char *text, size_t len, struct oci_state *ret, char *err, size_t errlen);
void oci_state_done(struct oci_state *s);
int oci_config_parse(const char *text, size_t len, struct oci_config *ret, char *err, size_t errlen);
void oci_config_done(struct oci_config *c);

/* The container's cgroup as a path relative to the cgroupfs root, from
 * linux.cgroupsPath: "/a/b" or "a/b" (cgroupfs driver, relative to the
 * root), or "slice:prefix:name" (systemd driver: the slice expanded as
 * systemd does, "a-b.slice" under "a.slice", the scope "prefix-name.scope").
 * Refuses "..", ".", empty components, control characters, and paths over
 * PATH_MAX. */
int oci_cgroup_path(const char *cgroups_path, char *ret, size_t size);
