/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-identity.h"
#include "wbg-base.h"

/* Scope prefixes of the systemd cgroup driver, per runtime. */
static const struct {
	const char *prefix, *runtime;
	bool conmon;
} scopes[] = {
	{ "cri-containerd-", "containerd", false },
	{ "crio-conmon-", "cri-o", true },
	{ "crio-", "cri-o", false },
	{ "docker-", "docker", false },
	{ "libpod-conmon-", "podman", true },
	{ "libpod-", "podman", false },
};

static bool eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static bool is_hex_id(const char *s, size_t n)
{
	if (n < 12 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* A pod UID: 36 chars of hex and dashes (or underscores in systemd units). */
static bool take_pod_uid(const char *s, size_t n, char out[40])
{
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i] == '_' ? '-' : s[i];

		if (!(isxdigit((unsigned char)c) || c == '-'))
			return false;
		out[i] = (char)tolower((unsigned char)c);
	}
	out[n] = 0;
	return true;
}

static bool has_suffix(const char *s, size_t n, const char *suffix, size_t *ret_stem)
{
	size_t k = strlen(suffix);

	if (n < k || memcmp(s + n - k, suffix, k) != 0)
		return false;
	*ret_stem = n - k;
	return true;
}

/* The levels the kubelet puts its pods' cgroups in: kubepods itself (a
 * guaranteed pod) or one of its QoS levels, in either driver's names. */
static bool kubelet_level(const char *s, size_t n)
{
	return eq(s, n, "kubepods") || eq(s, n, "kubepods.slice") || eq(s, n, "burstable") || eq(s, n, "besteffort") ||
	       eq(s, n, "kubepods-burstable.slice") || eq(s, n, "kubepods-besteffort.slice");
}

/* One path component s (n bytes) at depth, below parent (pn bytes). A pod
 * is only where the kubelet puts one, directly below one of its levels and
 * above every container: a tenant that may create cgroups below its own
 * names them as it likes ("pod<any uid>", "kubepods/burstable" again), and
 * each such name taken for a pod would be a tenant of its own with every
 * per-tenant share. */
static void component(struct wbg_identity *id, const char *s, size_t n, unsigned depth, const char *parent,
		      size_t pn)
{
	size_t stem;

	/* QoS level: kubepods-burstable.slice or kubepods/burstable */
	if (eq(s, n, "kubepods-burstable.slice") || (depth == 1 && eq(s, n, "burstable")))
		id->qos = WBG_QOS_BURSTABLE;
	else if (eq(s, n, "kubepods-besteffort.slice") || (depth == 1 && eq(s, n, "besteffort")))
		id->qos = WBG_QOS_BESTEFFORT;

	/* Pod: kubepods[-qos]-pod<uid>.slice (systemd) or pod<uid> (cgroupfs):
	 * "pod" then the 36-character UID at the end of the name. */
	if (!has_suffix(s, n, ".slice", &stem))
		stem = n;
	if (stem >= 39 && parent && kubelet_level(parent, pn) && !id->pod_uid[0] && !id->container_id[0]) {
		const char *p = s + stem - 39;

		if (memcmp(p, "pod", 3) == 0 && (p == s || p[-1] == '-') &&
		    take_pod_uid(p + 3, 36, id->pod_uid)) {
			id->is_pod = true;
			if (id->qos == WBG_QOS_NONE)
				id->qos = WBG_QOS_GUARANTEED;
			return;
		}
	}

	/* A container's id is its first: below it, names are its tenant's. */
	if (id->container_id[0])
		return;
	/* Container scope of the systemd driver */
	if (has_suffix(s, n, ".scope", &stem)) {
		for (size_t i = 0; i < ELEMENTSOF(scopes); i++) {
			size_t k = strlen(scopes[i].prefix);

			if (stem > k && strncmp(s, scopes[i].prefix, k) == 0 && is_hex_id(s + k, stem - k)) {
				id->runtime = scopes[i].runtime;
				id->is_conmon = scopes[i].conmon;
				snprintf(id->container_id, sizeof(id->container_id), "%.*s", (int)(stem - k), s + k);
				id->is_pod = false;
				return;
			}
		}
	}
	/* Container of the cgroupfs driver: a bare id under a pod, or under
	 * docker/ or libpod_parent/ */
	if (is_hex_id(s, n) && (id->pod_uid[0] || (id->runtime && *id->runtime))) {
		snprintf(id->container_id, sizeof(id->container_id), "%.*s", (int)n, s);
		id->is_pod = false;
		return;
	}
	if (depth == 0 && eq(s, n, "docker"))
		id->runtime = "docker";
	if (depth == 0 && eq(s, n, "libpod_parent"))
		id->runtime = "podman";
}

void cgroup_identity_parse(const char *path, struct wbg_identity *ret)
{
	struct wbg_identity id = { .runtime = "" };
	const char *s = path, *last = path, *parent = NULL;
	bool kube;
	unsigned depth = 0;
	size_t n, stem, pn = 0, two_levels = 0;

	while (*s == '/')
		s++;
	kube = strncmp(s, "kubepods/", 9) == 0 || strncmp(s, "kubepods.slice", 14) == 0 || strcmp(s, "kubepods") == 0;
	while (*s) {
		const char *e = strchr(s, '/');

		n = e ? (size_t)(e - s) : strlen(s);
		/* Podman and systemd-nspawn put the payload one level below the
		 * scope (".../libpod-<id>.scope/container"): keep the scope's id. */
		if (!(id.container_id[0] && (eq(s, n, "container") || eq(s, n, "init") || eq(s, n, "payload"))))
			component(&id, s, n, depth, parent, pn);
		/* the tenant: a pod's own cgroup, a user's manager
		 * (user.slice/user-1000.slice/user@1000.service), else the
		 * first two levels (system.slice/foo.service) */
		if (!id.tenant_len && id.is_pod)
			id.tenant_len = (size_t)(s - path) + n;
		if (!id.tenant_len && strncmp(path, "user.slice/", 11) == 0 && memchr(s, '@', n) &&
		    has_suffix(s, n, ".service", &stem))
			id.tenant_len = (size_t)(s - path) + n;
		if (depth == 1)
			two_levels = (size_t)(s - path) + n;
		last = parent = s;
		pn = n;
		depth++;
		s += n;
		while (*s == '/')
			s++;
	}
	if (!id.tenant_len)
		id.tenant_len = two_levels ? two_levels : strlen(path);
	n = strlen(last);
	while (n > 0 && last[n - 1] == '/')
		n--;
	if (has_suffix(last, n, ".service", &stem) || has_suffix(last, n, ".scope", &stem) ||
	    has_suffix(last, n, ".slice", &stem)) {
		snprintf(id.unit, sizeof(id.unit), "%.*s", (int)n, last);
		if (!*id.runtime && !kube) /* kubelet's own slices are no unit of ours */
			id.runtime = "systemd";
	}
	*ret = id;
}

const char *wbg_qos_to_string(enum wbg_qos q)
{
	switch (q) {
	case WBG_QOS_GUARANTEED:
		return "guaranteed";
	case WBG_QOS_BURSTABLE:
		return "burstable";
	case WBG_QOS_BESTEFFORT:
		return "besteffort";
	default:
		return "";
	}
}

size_t cgroup_tenant_len(const char *path)
{
	struct wbg_identity id;

	cgroup_identity_parse(path, &id);
	return id.tenant_len;
}
