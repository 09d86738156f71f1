/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-pod dirty expiry: which expiry a cgroup gets and how. Sources, first
 * that gives a valid value wins: the container's OCI annotation
 * wbguard.io/dirty-expire (only where the matching [policy "GLOB"] says
 * allow_annotation = yes, and clamped to [expiry] min..max: a tenant sets
 * its annotations, the admin the bounds), a [policy "GLOB"] section matching
 * the cgroup path or systemd unit, the [expiry] default. A bad value is
 * reported with its source and the next source decides. The per-pod
 * mechanism never runs more often than [expiry] per_pod_min, whatever the
 * source: each expiry is a map read and a flush on the event loop.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define WBG_EXPIRY_MAX_CS (24 * 3600 * 100)

enum wbg_expiry_mech {
	WBG_EXPIRY_PER_POD, /* wbguardd writes back the pod's own inodes once they are that old */
	WBG_EXPIRY_GLOBAL,  /* vm.dirty_expire_centisecs held at the lowest live request */
};

struct wbg_policy_rule {
	char *match;       /* fnmatch glob over the cgroup path, or the unit name */
	unsigned expire_cs; /* 0: the rule sets only the mechanism */
	enum wbg_expiry_mech mech;
	bool has_mech;
	bool allow_annotation; /* its cgroups' wbguard.io/dirty-expire is honoured */
};

/* What policy_resolve() reads: the [policy] sections and [expiry]'s keys
 * (config_expiry_rules()). */
struct wbg_expiry_rules {
	const struct wbg_policy_rule *policies;
	size_t n_policies;
	enum wbg_expiry_mech mech; /* [expiry] mechanism */
	unsigned default_cs;       /* 0: pods without a policy keep the kernel's */
	unsigned min_cs, max_cs;   /* bounds of an annotation's value */
	unsigned per_pod_min_cs;   /* the per-pod mechanism's floor, whatever the source */
};

struct wbg_policy {
	unsigned expire_cs;
	enum wbg_expiry_mech mech;
	char source[160]; /* "annotation wbguard.io/dirty-expire", "[policy \"GLOB\"]", "[expiry] default" */
};

/* Centiseconds ("500"), or a number with a unit: ms, cs, s, m, h ("5s",
 * "1.5s", "250ms"); at least 1 cs, at most a day. */
int parse_expiry(const char *v, unsigned *ret_cs);
int parse_expiry_mech(const char *v, enum wbg_expiry_mech *ret);
const char *wbg_expiry_mech_to_string(enum wbg_expiry_mech m);

/* The policy for a cgroup (path relative to the cgroupfs root; unit may be
 * NULL; annotation is the container's wbguard.io/dirty-expire or NULL).
 * Returns 1 with *ret filled, or 0 when no source asks for one (the kernel's
 * own expiry applies). An annotation that is invalid, not allowed, or
 * clamped is described in err (empty if none). */
int policy_resolve(const struct wbg_expiry_rules *c, const char *path, const char *unit, const char *annotation,
		   struct wbg_policy *ret, char *err, size_t errlen);
