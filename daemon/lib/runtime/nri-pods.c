/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "containers.h"
#include "nri-pods-internal.h"
#include "wbg-base.h"

static int cmp_id(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *str(const char *s)
{
	return s ? s : "";
}

void nri_pods_init(struct nri_pods *t)
{
	*t = (struct nri_pods){ 0 };
}

static void pod_free(void *p)
{
	struct nri_pod *pod = p;

	free(pod->id);
	free(pod->name);
	free(pod->namespace);
	free(pod->uid);
	free(pod->dirty_expire);
	free(pod);
}

void nri_pods_clear(struct nri_pods *t)
{
	tdestroy(t->by_id, pod_free);
	for (size_t i = 0; i < t->n_deferred; i++)
		free(t->deferred[i].data);
	free(t->deferred);
	nri_pods_init(t);
}

const char *nri_pod_expire(const NriPod *p)
{
	for (size_t i = 0; p && i < p->n_annotations; i++)
		if (p->annotations[i]->key && strcmp(p->annotations[i]->key, WBG_EXPIRY_ANNOTATION) == 0)
			return p->annotations[i]->value;
	return NULL;
}

static const char *container_expire(const NriContainer *c)
{
	for (size_t i = 0; i < c->n_annotations; i++)
		if (c->annotations[i]->key && strcmp(c->annotations[i]->key, WBG_EXPIRY_ANNOTATION) == 0)
			return c->annotations[i]->value;
	return NULL;
}

static int dup_opt(const char *s, char **ret)
{
	*ret = s ? strdup(s) : NULL;
	return !s || *ret ? 0 : -ENOMEM;
}

/* A runtime's value, kept only within what Kubernetes allows (as the
 * container table keeps a registration's): longer is as if absent. */
static const char *bounded(const char *s, size_t max)
{
	return s && strnlen(s, max + 1) <= max ? s : NULL;
}

int nri_pods_note(struct nri_pods *t, const NriPod *p)
{
	struct nri_pod *pod, **found;
	const char *key = str(p->id);

	if (!*key || strlen(key) > WBG_NRI_ID_MAX)
		return -EINVAL;
	found = tfind(&key, &t->by_id, cmp_id);
	if (!found && t->n >= WBG_NRI_PODS_MAX)
		return -ENOSPC;
	pod = calloc(1, sizeof(*pod));
	if (!pod)
		return -ENOMEM;
	if (dup_opt(key, &pod->id) < 0 || dup_opt(bounded(str(p->name), WBG_CONTAINER_NAME_MAX), &pod->name) < 0 ||
	    dup_opt(bounded(str(p->namespace_), WBG_CONTAINER_NAMESPACE_MAX), &pod->namespace) < 0 ||
	    dup_opt(bounded(str(p->uid), WBG_CONTAINER_NAME_MAX), &pod->uid) < 0 ||
	    dup_opt(bounded(nri_pod_expire(p), WBG_CONTAINER_EXPIRE_MAX), &pod->dirty_expire) < 0) {
		pod_free(pod);
		return -ENOMEM;
	}
	if (found) {
		struct nri_pod *old = *found;

		*found = pod; /* the same key: the tree's order holds */
		pod_free(old);
		return 0;
	}
	if (!tsearch(pod, &t->by_id, cmp_id)) {
		pod_free(pod);
		return -ENOMEM;
	}
	t->n++;
	return 0;
}

const struct nri_pod *nri_pods_find(const struct nri_pods *t, const char *id)
{
	struct nri_pod **found;

	if (!id)
		return NULL;
	found = tfind(&id, &t->by_id, cmp_id);
	return found ? *found : NULL;
}

int nri_pods_defer(struct nri_pods *t, const NriContainer *c)
{
	/* only what its report needs: a runtime's args, env and mounts
	 * are not kept */
	NriContainer slim = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT;
	Nri__Pkg__Api__V1alpha1__LinuxContainer linux = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT;
	Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry expire =
		NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT, *ann[1] = { &expire };
	struct nri_deferred *d;
	uint8_t *data;
	size_t len;

	slim.id = c->id;
	slim.pod_sandbox_id = c->pod_sandbox_id;
	slim.name = c->name;
	slim.pid = c->pid;
	if (c->linux) {
		linux.cgroups_path = c->linux->cgroups_path;
		slim.linux = &linux;
	}
	expire.key = (char *)WBG_EXPIRY_ANNOTATION;
	expire.value = (char *)bounded(container_expire(c), WBG_CONTAINER_EXPIRE_MAX);
	if (expire.value) {
		slim.annotations = ann;
		slim.n_annotations = 1;
	}
	len = protobuf_c_message_get_packed_size(&slim.base);
	if (t->n_deferred >= WBG_NRI_DEFERRED_MAX || t->deferred_bytes + len > WBG_NRI_DEFERRED_BYTES)
		return -ENOSPC;
	d = realloc(t->deferred, (t->n_deferred + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	t->deferred = d;
	data = malloc(len ? len : 1);
	if (!data)
		return -ENOMEM;
	protobuf_c_message_pack(&slim.base, data);
	t->deferred[t->n_deferred++] = (struct nri_deferred){ .data = data, .len = len };
	t->deferred_bytes += len;
	return 0;
}

void nri_pods_flush_deferred(struct nri_pods *t,
			     void (*fn)(const NriContainer *c, const struct nri_pod *pod, void *userdata),
			     void *userdata)
{
	for (size_t i = 0; i < t->n_deferred; i++) {
		NriContainer *c = nri__pkg__api__v1alpha1__container__unpack(NULL, t->deferred[i].len,
									     t->deferred[i].data);

		/* it was packed from a message that unpacked: it unpacks,
		 * unless memory ran out */
		if (c)
			fn(c, nri_pods_find(t, c->pod_sandbox_id), userdata);
		nri__pkg__api__v1alpha1__container__free_unpacked(c, NULL);
		free(t->deferred[i].data);
	}
	free(t->deferred);
	t->deferred = NULL;
	t->n_deferred = t->deferred_bytes = 0;
}

void nri_container_report(const NriContainer *c, const NriPod *pod_msg, const struct nri_pod *pod,
			  struct wbg_nri_container *ret)
{
	const char *expire = container_expire(c);

	if (!expire)
		expire = pod_msg ? nri_pod_expire(pod_msg) : pod ? pod->dirty_expire : NULL;
	*ret = (struct wbg_nri_container){
		.id = str(c->id),
		.pod_id = str(c->pod_sandbox_id),
		.name = str(c->name),
		.pod = pod_msg ? str(pod_msg->name) : pod ? pod->name : "",
		.namespace = pod_msg ? str(pod_msg->namespace_) : pod ? pod->namespace : "",
		.pod_uid = pod_msg ? str(pod_msg->uid) : pod ? pod->uid : "",
		.cgroups_path = c->linux ? str(c->linux->cgroups_path) : "",
		.dirty_expire = expire,
		.pid = c->pid,
	};
}

void nri_sandbox_report(const NriPod *p, struct wbg_nri_container *ret)
{
	*ret = (struct wbg_nri_container){
		.id = str(p->id),
		.pod_id = str(p->id),
		.name = "",
		.pod = str(p->name),
		.namespace = str(p->namespace_),
		.pod_uid = str(p->uid),
		.cgroups_path = p->linux ? str(p->linux->cgroups_path) : "",
		.dirty_expire = nri_pod_expire(p),
		.sandbox = true,
	};
}
