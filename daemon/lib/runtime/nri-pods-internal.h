/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a synchronization remembers of its pods: their names and expiry
 * annotation by pod id, for containers that name their pod by id alone (a
 * Synchronize lists pods and containers apart, and a split one may send a
 * container before its pod: those wait here until the last part). Emptied
 * at the last part (every event carries its container's pod). Both tables
 * are bounded; what does not fit is counted by the caller.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nri.pb-c.h"
#include "nri-plugin.h"

struct nri_pod {
	char *id; /* first member: the tree's key */
	char *name, *namespace, *uid;
	char *dirty_expire; /* NULL when the pod has none */
};

struct nri_pods {
	void *by_id;
	size_t n;
	/* containers of a split synchronization whose pod was not yet sent:
	 * packed as they came */
	struct nri_deferred {
		uint8_t *data;
		size_t len;
	} *deferred;
	size_t n_deferred, deferred_bytes;
};

typedef Nri__Pkg__Api__V1alpha1__PodSandbox NriPod;
typedef Nri__Pkg__Api__V1alpha1__Container NriContainer;

void nri_pods_init(struct nri_pods *t);
/* Forgets every pod and deferred container (a connection ended). */
void nri_pods_clear(struct nri_pods *t);
/* Remembers (or refreshes) a pod: -ENOSPC past WBG_NRI_PODS_MAX, -ENOMEM. */
int nri_pods_note(struct nri_pods *t, const NriPod *p);
const struct nri_pod *nri_pods_find(const struct nri_pods *t, const char *id);
/* Keeps a container until its pod comes: -ENOSPC past the bounds. */
int nri_pods_defer(struct nri_pods *t, const NriContainer *c);
/* Hands each deferred container to fn, with its pod if now known, and
 * forgets them. */
void nri_pods_flush_deferred(struct nri_pods *t,
			     void (*fn)(const NriContainer *c, const struct nri_pod *pod, void *userdata),
			     void *userdata);

/* The report of a container, given its pod as a message (events) or as
 * remembered (synchronization); either may be NULL. */
void nri_container_report(const NriContainer *c, const NriPod *pod_msg, const struct nri_pod *pod,
			  struct wbg_nri_container *ret);
/* The report of a pod's sandbox: the pod as a container of no name. */
void nri_sandbox_report(const NriPod *p, struct wbg_nri_container *ret);
/* The expiry annotation among a map's entries, or NULL. */
const char *nri_pod_expire(const NriPod *p);
