/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "containers.h"
#include "wbg-base.h"
#include "oci.h"

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_parent(const void *a, const void *b)
{
	return strcmp(((const struct wbg_container *)a)->parent, ((const struct wbg_container *)b)->parent);
}

int containers_init(struct wbg_containers *t, size_t cap)
{
	*t = (struct wbg_containers){ 0 };
	return ring_init(&t->ring, cap);
}

static void container_free(struct wbg_container *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->parent);
	free(c->id);
	free(c->bundle);
	free(c->pod);
	free(c->namespace);
	free(c->name);
	free(c->dirty_expire);
	free(c->pod_uid);
	free(c);
}

static void drop(struct wbg_containers *t, struct wbg_container *c)
{
	struct wbg_container **p = tfind(c, &t->by_parent, cmp_parent);

	tdelete(c, &t->by_path, cmp_path);
	ring_remove(&t->ring, c);
	if (p && *p == c) {
		/* the newest other container below the same parent, if any */
		tdelete(c, &t->by_parent, cmp_parent);
		for (size_t i = t->ring.n; i > 0; i--) {
			struct wbg_container *o = *ring_slot(&t->ring, i - 1);

			if (strcmp(o->parent, c->parent) == 0) {
				(void)tsearch(o, &t->by_parent, cmp_parent);
				break;
			}
		}
	}
	container_free(c);
}

void containers_free(struct wbg_containers *t)
{
	struct wbg_container *c;

	while ((c = ring_pop(&t->ring))) {
		tdelete(c, &t->by_path, cmp_path);
		tdelete(c, &t->by_parent, cmp_parent);
		container_free(c);
	}
	ring_free(&t->ring);
	*t = (struct wbg_containers){ 0 };
}

void container_k8s_names(const char *const *keys, const char *const *values, size_t n, const char **ret_pod,
			 const char **ret_namespace, const char **ret_name)
{
	static const char *const names[3][2] = {
		{ "io.kubernetes.pod.name", "io.kubernetes.cri.sandbox-name" },
		{ "io.kubernetes.pod.namespace", "io.kubernetes.cri.sandbox-namespace" },
		{ "io.kubernetes.container.name", "io.kubernetes.cri.container-name" },
	};
	const char *found[3] = { NULL, NULL, NULL };

	for (size_t i = 0; i < n; i++)
		for (size_t f = 0; f < 3; f++)
			if ((strcmp(keys[i], names[f][0]) == 0 || strcmp(keys[i], names[f][1]) == 0) && *values[i])
				found[f] = values[i];
	*ret_pod = found[0];
	*ret_namespace = found[1];
	*ret_name = found[2];
}

static int dup_opt(const char *s, char **ret)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* A tenant's value, kept only within max bytes: a registration costs what
 * Kubernetes' names cost, whatever a container's annotations say. */
static const char *bounded(struct wbg_containers *t, const char *s, size_t max)
{
	if (s && strnlen(s, max + 1) > max) {
		uint64_t k = ++t->values_too_long;

		if (!(k & (k - 1))) /* 1, 2, 4...: a tenant's flood writes a few lines */
			log_notice("A container's annotation value is longer than %zu bytes: not kept (%" PRIu64 " so far)",
				   max, k);
		return NULL;
	}
	return s;
}

const char *containers_sources_to_string(unsigned sources, char *buf, size_t size)
{
	static const char *const names[] = { "hook", "nri", "state" };
	size_t len = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < ELEMENTSOF(names); i++)
		if (sources & (1u << i) && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "+" : "", names[i]);
	return buf;
}

int containers_register(struct wbg_containers *t, const char *path, const char *id, const char *bundle,
			const char *const *keys, const char *const *values, size_t n)
{
	return containers_register_from(t, WBG_SOURCE_HOOK, path, id, bundle, keys, values, n);
}

int containers_register_from(struct wbg_containers *t, unsigned source, const char *path, const char *id,
			     const char *bundle, const char *const *keys, const char *const *values, size_t n)
{
	struct wbg_container *c = calloc(1, sizeof(*c)), **found;
	const struct wbg_container *old = containers_find(t, path);
	const char *pod, *ns, *name, *expire = NULL, *uid = NULL;

	if (!c)
		return -ENOMEM;
	container_k8s_names(keys, values, n, &pod, &ns, &name);
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], WBG_EXPIRY_ANNOTATION) == 0)
			expire = values[i];
		else if ((strcmp(keys[i], "io.kubernetes.pod.uid") == 0 || strcmp(keys[i], "io.kubernetes.cri.sandbox-uid") == 0) &&
			 *values[i])
			uid = values[i];
	uid = bounded(t, uid, WBG_CONTAINER_POD_UID_MAX);
	pod = bounded(t, pod, WBG_CONTAINER_NAME_MAX);
	ns = bounded(t, ns, WBG_CONTAINER_NAMESPACE_MAX);
	name = bounded(t, name, WBG_CONTAINER_NAME_MAX);
	expire = bounded(t, expire, WBG_CONTAINER_EXPIRE_MAX);
	c->sources = source;
	if (old && strcmp(old->id, id) == 0) {
		/* the same container told twice: merged (old is freed below,
		 * after the copies) */
		pod = pod ? pod : old->pod;
		ns = ns ? ns : old->namespace;
		name = name ? name : old->name;
		expire = expire ? expire : old->dirty_expire;
		uid = uid ? uid : old->pod_uid;
		bundle = bundle ? bundle : old->bundle;
		c->sources |= old->sources;
		c->tracked = old->tracked;
	}
	if (dup_opt(path, &c->path) < 0 || dup_opt(id, &c->id) < 0 || dup_opt(bundle, &c->bundle) < 0 ||
	    dup_opt(pod, &c->pod) < 0 || dup_opt(ns, &c->namespace) < 0 || dup_opt(name, &c->name) < 0 ||
	    dup_opt(expire, &c->dirty_expire) < 0 || dup_opt(uid, &c->pod_uid) < 0) {
		container_free(c);
		return -ENOMEM;
	}
	{
		const char *slash = strrchr(path, '/');

		c->parent = strndup(path, slash ? (size_t)(slash - path) : 0);
		if (!c->parent) {
			container_free(c);
			return -ENOMEM;
		}
	}
	c->seq = ++t->next_seq;
	found = tfind(c, &t->by_path, cmp_path);
	if (found)
		drop(t, *found);
	if (ring_full(&t->ring))
		drop(t, *ring_slot(&t->ring, 0)); /* the oldest makes room */
	if (!tsearch(c, &t->by_path, cmp_path)) {
		container_free(c);
		return -ENOMEM;
	}
	ring_push(&t->ring, c);
	/* the newest below its parent names the pod's cgroup */
	{
		struct wbg_container **p = tsearch(c, &t->by_parent, cmp_parent);

		if (p && *p != c)
			*p = c; /* same parent, same key: the node takes the newer one */
	}
	return 0;
}

const struct wbg_container *containers_find(const struct wbg_containers *t, const char *path)
{
	struct wbg_container key = { .path = (char *)path }, **found = tfind(&key, &t->by_path, cmp_path);

	return found ? *found : NULL;
}

const struct wbg_container *containers_find_below(const struct wbg_containers *t, const char *path)
{
	struct wbg_container key = { .parent = (char *)path }, **found = tfind(&key, &t->by_parent, cmp_parent);

	return found ? *found : NULL;
}

void containers_names(const struct wbg_containers *t, const char *path, struct wbg_container_names *ret)
{
	const struct wbg_container *c = t ? containers_find(t, path) : NULL, *below = NULL;

	*ret = (struct wbg_container_names){ "", "", "", "", "" };
	if (c) {
		ret->container_id = c->id;
		ret->pod_uid = c->pod_uid ? c->pod_uid : "";
		if (c->pod) {
			ret->pod = c->pod;
			ret->namespace = c->namespace ? c->namespace : "";
			ret->container = c->name ? c->name : "";
			return;
		}
	}
	below = t ? containers_find_below(t, path) : NULL;
	if (below && below->pod) {
		ret->pod = below->pod;
		ret->pod_uid = below->pod_uid ? below->pod_uid : "";
		ret->namespace = below->namespace ? below->namespace : "";
	}
}

void containers_forget(struct wbg_containers *t, const char *path)
{
	struct wbg_container key = { .path = (char *)path }, **found = tfind(&key, &t->by_path, cmp_path);

	if (found)
		drop(t, *found);
}

void containers_set_tracked(struct wbg_containers *t, const char *path)
{
	struct wbg_container key = { .path = (char *)path }, **found = tfind(&key, &t->by_path, cmp_path);

	if (found)
		(*found)->tracked = true;
}

const struct wbg_container *containers_find_id(const struct wbg_containers *t, const char *id)
{
	/* newest first: a reused id is its latest container */
	for (size_t i = t->ring.n; i > 0; i--) {
		const struct wbg_container *c = *ring_slot(&t->ring, i - 1);

		if (strcmp(c->id, id) == 0)
			return c;
	}
	return NULL;
}

int containers_check(const char *id, const char *cgroup, size_t n_annotations, char *rel, size_t rel_size, char *why,
		     size_t why_size)
{
	if (!*id || strlen(id) > 1024) {
		snprintf(why, why_size, "container id: empty or longer than 1024 bytes");
		return -EINVAL;
	}
	if (oci_cgroup_path(cgroup, rel, rel_size) < 0) {
		snprintf(why, why_size, "cgroup '%.1024s' (container %.256s) is not a cgroup path under the cgroupfs root",
			 cgroup, id);
		return -EINVAL;
	}
	if (n_annotations > WBG_CONTAINER_ANNOTATIONS_MAX) {
		snprintf(why, why_size, "container %.256s: more than %d annotations", id, WBG_CONTAINER_ANNOTATIONS_MAX);
		return -E2BIG;
	}
	return 0;
}
