/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Containers registered through the control API (the OCI hook at
 * createRuntime): who a cgroup belongs to in Kubernetes terms, which the
 * cgroup path alone cannot say, and the container's annotations (its
 * dirty-expiry request). Keyed by the cgroup path relative to the cgroupfs
 * root. Bounded: a full table drops its oldest entry.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "wbg-base.h"

#define WBG_CONTAINERS_MAX 16384
#define WBG_CONTAINER_ANNOTATIONS_MAX 256

struct wbg_container {
	char *path;      /* relative to the cgroupfs root; first member: the tree's key */
	char *parent;    /* its parent cgroup's path: the pod's cgroup, in the CRI layouts */
	char *id;        /* the runtime's container id */
	char *bundle;
	char *pod, *namespace, *name; /* from the CRI's annotations; NULL if not a pod's */
	char *pod_uid;                /* the pod's uid (NRI, the CRI's annotations); NULL if not given */
	char *dirty_expire;           /* wbguard.io/dirty-expire as given, or NULL */
	uint64_t seq;                 /* registration order */
	unsigned sources;             /* WBG_SOURCE_* that told of it */
	bool tracked;                 /* its cgroup is wbguardd's: its departure forgets it */
};

/* Who registered a container: the OCI hook (through the control API), NRI,
 * or the runtime's state on disk. */
enum {
	WBG_SOURCE_HOOK = 1 << 0,
	WBG_SOURCE_NRI = 1 << 1,
	WBG_SOURCE_STATE = 1 << 2,
};
/* "hook", "nri", "hook+nri"... */
const char *containers_sources_to_string(unsigned sources, char *buf, size_t size);

struct wbg_containers {
	void *by_path;
	void *by_parent; /* the newest container below each parent cgroup */
	struct wbg_ring ring; /* arrival order, for eviction */
	uint64_t next_seq;
	uint64_t values_too_long; /* names longer than Kubernetes allows: not kept (counted) */
};

/* What a registration keeps of a tenant's annotations, at most: the names'
 * lengths Kubernetes allows (a pod's name is a DNS subdomain, 253; a
 * namespace a label, 63), and an expiry like "1500ms". Longer ones are not
 * stored, as if absent. */
#define WBG_CONTAINER_NAME_MAX 253
#define WBG_CONTAINER_NAMESPACE_MAX 63
#define WBG_CONTAINER_EXPIRE_MAX 32
/* a Kubernetes uid: 36 characters with its dashes */
#define WBG_CONTAINER_POD_UID_MAX 36

int containers_init(struct wbg_containers *t, size_t cap);
void containers_free(struct wbg_containers *t);
/* keys/values: the container's annotations (n pairs). Replaces an earlier
 * registration of the same path; when it was the same container (its id),
 * the two are merged: what the new one lacks (names, expiry, bundle) is
 * kept, and its sources add up. The hook and NRI both register a
 * container: it is one entry, never two. */
int containers_register_from(struct wbg_containers *t, unsigned source, const char *path, const char *id,
			     const char *bundle, const char *const *keys, const char *const *values, size_t n);
/* ... from the hook */
int containers_register(struct wbg_containers *t, const char *path, const char *id, const char *bundle,
			const char *const *keys, const char *const *values, size_t n);
const struct wbg_container *containers_find(const struct wbg_containers *t, const char *path);
/* Whose cgroup path is: the container registered at path, or, for a
 * pod-level cgroup, the pod of a container registered right below it (its
 * container and id then blank). Empty strings where unknown, never NULL. */
struct wbg_container_names {
	const char *pod, *namespace, *container, *container_id, *pod_uid;
};
void containers_names(const struct wbg_containers *t, const char *path, struct wbg_container_names *ret);
/* A registered container right below path (the newest): a pod-level
 * cgroup's pod names, which its own path cannot say. */
const struct wbg_container *containers_find_below(const struct wbg_containers *t, const char *path);
/* By the runtime's container id (the latest registration with it). */
const struct wbg_container *containers_find_id(const struct wbg_containers *t, const char *id);
static inline size_t containers_count(const struct wbg_containers *t)
{
	return t->ring.n;
}
void containers_forget(struct wbg_containers *t, const char *path);
/* Its cgroup is tracked: the names stay until the cgroup departs (its
 * handover's record needs them), whatever the runtime says first. */
void containers_set_tracked(struct wbg_containers *t, const char *path);

/* The pod, namespace and container name among a container's annotations, as
 * CRI-O (io.kubernetes.pod.name ...) or containerd (io.kubernetes.cri.
 * sandbox-name ...) set them; NULL where absent. */
void container_k8s_names(const char *const *keys, const char *const *values, size_t n, const char **ret_pod,
			 const char **ret_namespace, const char **ret_name);

/* RegisterContainer's arguments as a tenant may have made them: a non-empty
 * id of at most 1,024 bytes, a cgroup path under the cgroupfs root (written
 * to rel, relative), at most WBG_CONTAINER_ANNOTATIONS_MAX annotations.
 * -EINVAL or -E2BIG with why filled (naming the field and the container). */
int containers_check(const char *id, const char *cgroup, size_t n_annotations, char *rel, size_t rel_size, char *why,
		     size_t why_size);
