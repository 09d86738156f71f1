/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "containers.h"
#include "expiry-policy.h"
#include "macro.h"

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int containers_init(struct wbg_containers *t, size_t cap)
{
	*t = (struct wbg_containers){ .cap = cap };
	t->ring = calloc(cap, sizeof(*t->ring)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	return t->ring ? 0 : -ENOMEM;
}

static void container_free(struct wbg_container *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->id);
	free(c->bundle);
	free(c->pod);
	free(c->namespace);
	free(c->name);
	free(c->dirty_expire);
	free(c);
}

static void ring_remove(struct wbg_containers *t, struct wbg_container *c)
{
	for (size_t i = 0; i < t->n; i++) {
		size_t k = (t->head + i) % t->cap;

		if (t->ring[k] != c)
			continue;
		if (i == 0) { /* the oldest: the common case */
			t->head = (t->head + 1) % t->cap;
			t->n--;
			return;
		}
		/* close the gap, keeping arrival order */
		for (size_t j = i; j + 1 < t->n; j++)
			t->ring[(t->head + j) % t->cap] = t->ring[(t->head + j + 1) % t->cap];
		t->n--;
		return;
	}
}

static void drop(struct wbg_containers *t, struct wbg_container *c)
{
	tdelete(c, &t->by_path, cmp_path);
	ring_remove(t, c);
	container_free(c);
}

void containers_free(struct wbg_containers *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct wbg_container *c = t->ring[(t->head + i) % t->cap];

		tdelete(c, &t->by_path, cmp_path);
		container_free(c);
	}
	free(t->ring);
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

int containers_register(struct wbg_containers *t, const char *path, const char *id, const char *bundle,
			const char *const *keys, const char *const *values, size_t n)
{
	struct wbg_container *c = calloc(1, sizeof(*c)), **found;
	const char *pod, *ns, *name, *expire = NULL;

	if (!c)
		return -ENOMEM;
	container_k8s_names(keys, values, n, &pod, &ns, &name);
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], WBG_EXPIRY_ANNOTATION) == 0)
			expire = values[i];
	if (dup_opt(path, &c->path) < 0 || dup_opt(id, &c->id) < 0 || dup_opt(bundle, &c->bundle) < 0 ||
	    dup_opt(pod, &c->pod) < 0 || dup_opt(ns, &c->namespace) < 0 || dup_opt(name, &c->name) < 0 ||
	    dup_opt(expire, &c->dirty_expire) < 0) {
		container_free(c);
		return -ENOMEM;
	}
	c->seq = ++t->next_seq;
	found = tfind(c, &t->by_path, cmp_path);
	if (found)
		drop(t, *found);
	if (t->n == t->cap)
		drop(t, t->ring[t->head]); /* the oldest makes room */
	if (!tsearch(c, &t->by_path, cmp_path)) {
		container_free(c);
		return -ENOMEM;
	}
	t->ring[(t->head + t->n) % t->cap] = c;
	t->n++;
	return 0;
}

const struct wbg_container *containers_find(const struct wbg_containers *t, const char *path)
{
	struct wbg_container key = { .path = (char *)path }, **found = tfind(&key, &t->by_path, cmp_path);

	return found ? *found : NULL;
}

void containers_forget(struct wbg_containers *t, const char *path)
{
	struct wbg_container key = { .path = (char *)path }, **found = tfind(&key, &t->by_path, cmp_path);

	if (found)
		drop(t, *found);
}

const struct wbg_container *containers_find_id(const struct wbg_containers *t, const char *id)
{
	/* newest first: a reused id is its latest container */
	for (size_t i = t->n; i > 0; i--) {
		const struct wbg_container *c = t->ring[(t->head + i - 1) % t->cap];

		if (strcmp(c->id, id) == 0)
			return c;
	}
	return NULL;
}
