/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who a cgroup belongs to, from its path alone: runtime, pod, container, QoS,
 * systemd unit. Covers kubelet's systemd and cgroupfs drivers (containerd,
 * CRI-O, Docker), Docker and Podman on their own, and plain systemd units. */
#pragma once

#include <stddef.h>

#include <stdbool.h>

enum wbg_qos { WBG_QOS_NONE, WBG_QOS_GUARANTEED, WBG_QOS_BURSTABLE, WBG_QOS_BESTEFFORT };

struct wbg_identity {
	const char *runtime; /* "containerd", "cri-o", "docker", "podman", "systemd", "" */
	enum wbg_qos qos;    /* kubelet pods only */
	char pod_uid[40];    /* with dashes, as the API server shows it */
	char container_id[72];
	char unit[256];      /* systemd unit of the last component, if it is one */
	bool is_pod;         /* the pod-level cgroup itself */
	bool is_conmon;      /* CRI-O's / Podman's conmon, not a container */
	size_t tenant_len;   /* cgroup_tenant_len() */
};

/* path relative to the cgroupfs root, without leading '/'. Never fails on
 * odd paths: fields it cannot tell stay empty. */
void cgroup_identity_parse(const char *path, struct wbg_identity *ret);
const char *wbg_qos_to_string(enum wbg_qos q);
/* The length of path's prefix that names its tenant, the subtree one owner
 * controls: a pod's cgroup (where the kubelet puts one: never a name below
 * a pod or a container), a user's manager (user@UID.service), else the
 * first two levels (system.slice/foo.service). Every per-tenant share keys
 * by this prefix, and the identity's pod is the pod it names. */
size_t cgroup_tenant_len(const char *path);
