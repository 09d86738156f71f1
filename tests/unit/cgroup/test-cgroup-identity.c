/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Real-world cgroup paths, one per runtime and driver. */
#include <string.h>

#include "cgroup-identity.h"
#include "tap.h"

#define CID "3f2a9c1d7e6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f"
#define CID2 "aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999"
#define UID_DASH "6b9c4b2e-1f3a-4c5d-9e8f-0a1b2c3d4e5f"
#define UID_US "6b9c4b2e_1f3a_4c5d_9e8f_0a1b2c3d4e5f"
#define UID2_DASH "0d8e1f2a-3b4c-4d5e-8f9a-b1c2d3e4f5a6"
#define UID2_US "0d8e1f2a_3b4c_4d5e_8f9a_b1c2d3e4f5a6"

static const struct {
	const char *path, *runtime, *pod, *container, *unit;
	enum wbg_qos qos;
	int is_pod, conmon;
} cases[] = {
	/* kubelet, systemd driver */
	{ "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US ".slice/cri-containerd-" CID ".scope",
	  "containerd", UID_DASH, CID, "cri-containerd-" CID ".scope", WBG_QOS_BURSTABLE, 0, 0 },
	{ "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_US ".slice/crio-" CID ".scope",
	  "cri-o", UID_DASH, CID, "crio-" CID ".scope", WBG_QOS_BESTEFFORT, 0, 0 },
	{ "kubepods.slice/kubepods-pod" UID_US ".slice/docker-" CID ".scope", "docker", UID_DASH, CID,
	  "docker-" CID ".scope", WBG_QOS_GUARANTEED, 0, 0 },
	{ "kubepods.slice/kubepods-pod" UID_US ".slice/crio-conmon-" CID ".scope", "cri-o", UID_DASH, CID,
	  "crio-conmon-" CID ".scope", WBG_QOS_GUARANTEED, 0, 1 },
	{ "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US ".slice", "", UID_DASH, "",
	  "kubepods-burstable-pod" UID_US ".slice", WBG_QOS_BURSTABLE, 1, 0 },
	{ "kubepods.slice/kubepods-burstable.slice", "", "", "", "kubepods-burstable.slice", WBG_QOS_BURSTABLE, 0, 0 },
	/* kubelet, cgroupfs driver */
	{ "kubepods/burstable/pod" UID_DASH "/" CID, "", UID_DASH, CID, "", WBG_QOS_BURSTABLE, 0, 0 },
	{ "kubepods/besteffort/pod" UID_DASH "/" CID, "", UID_DASH, CID, "", WBG_QOS_BESTEFFORT, 0, 0 },
	{ "kubepods/pod" UID_DASH "/" CID, "", UID_DASH, CID, "", WBG_QOS_GUARANTEED, 0, 0 },
	{ "kubepods/pod" UID_DASH, "", UID_DASH, "", "", WBG_QOS_GUARANTEED, 1, 0 },
	/* Docker and Podman on their own */
	{ "system.slice/docker-" CID ".scope", "docker", "", CID, "docker-" CID ".scope", WBG_QOS_NONE, 0, 0 },
	{ "docker/" CID, "docker", "", CID, "", WBG_QOS_NONE, 0, 0 },
	{ "machine.slice/libpod-" CID ".scope/container", "podman", "", CID, "", WBG_QOS_NONE, 0, 0 },
	{ "machine.slice/libpod-" CID ".scope", "podman", "", CID, "libpod-" CID ".scope", WBG_QOS_NONE, 0, 0 },
	{ "user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID ".scope", "podman", "", CID,
	  "libpod-" CID ".scope", WBG_QOS_NONE, 0, 0 },
	{ "machine.slice/libpod-conmon-" CID ".scope", "podman", "", CID, "libpod-conmon-" CID ".scope",
	  WBG_QOS_NONE, 0, 1 },
	{ "libpod_parent/libpod-" CID, "podman", "", "", "", WBG_QOS_NONE, 0, 0 },
	/* plain systemd */
	{ "system.slice/nginx.service", "systemd", "", "", "nginx.service", WBG_QOS_NONE, 0, 0 },
	{ "system.slice/wbg-probe.scope", "systemd", "", "", "wbg-probe.scope", WBG_QOS_NONE, 0, 0 },
	{ "user.slice/user-1000.slice/session-3.scope", "systemd", "", "", "session-3.scope", WBG_QOS_NONE, 0, 0 },
	/* odd ones: never confused, never crash */
	{ "", "", "", "", "", WBG_QOS_NONE, 0, 0 },
	{ "/", "", "", "", "", WBG_QOS_NONE, 0, 0 },
	{ "wbstall/old", "", "", "", "", WBG_QOS_NONE, 0, 0 },
	{ "kubepods/pod-not-a-uid/abc", "", "", "", "", WBG_QOS_NONE, 0, 0 },
	{ "system.slice/docker-XYZ.scope", "systemd", "", "", "docker-XYZ.scope", WBG_QOS_NONE, 0, 0 },
	{ "a b/new\nline.service", "systemd", "", "", "new\nline.service", WBG_QOS_NONE, 0, 0 },
	/* a tenant's own names below its container: the kubelet's pod stays
	 * the pod, whatever the tenant calls its cgroups */
	{ "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US ".slice/cri-containerd-" CID
	  ".scope/kubepods-burstable-pod" UID2_US ".slice",
	  "containerd", UID_DASH, CID, "kubepods-burstable-pod" UID2_US ".slice", WBG_QOS_BURSTABLE, 0, 0 },
	{ "kubepods/burstable/pod" UID_DASH "/" CID "/pod" UID2_DASH, "", UID_DASH, CID, "", WBG_QOS_BURSTABLE, 0, 0 },
	{ "kubepods/burstable/pod" UID_DASH "/" CID "/kubepods/burstable/pod" UID2_DASH, "", UID_DASH, CID, "",
	  WBG_QOS_BURSTABLE, 0, 0 },
	{ "kubepods/burstable/pod" UID_DASH "/" CID "/" CID2, "", UID_DASH, CID, "", WBG_QOS_BURSTABLE, 0, 0 },
	{ "system.slice/docker-" CID ".scope/docker-" CID2 ".scope", "docker", "", CID, "docker-" CID2 ".scope",
	  WBG_QOS_NONE, 0, 0 },
	/* a pod's uid only where the kubelet puts pods */
	{ "system.slice/foo.service/pod" UID2_DASH, "", "", "", "", WBG_QOS_NONE, 0, 0 },
};

/* Each path's tenant: the prefix every per-tenant share keys by. */
static const struct {
	const char *path, *tenant;
} tenants[] = {
	{ "kubepods/burstable/pod" UID_DASH "/" CID, "kubepods/burstable/pod" UID_DASH },
	{ "kubepods/burstable/pod" UID_DASH "/" CID "/pod" UID2_DASH, "kubepods/burstable/pod" UID_DASH },
	{ "kubepods/burstable/pod" UID_DASH "/" CID "/kubepods/burstable/pod" UID2_DASH "/x",
	  "kubepods/burstable/pod" UID_DASH },
	{ "kubepods.slice/kubepods-pod" UID_US ".slice/docker-" CID ".scope/kubepods-pod" UID2_US ".slice",
	  "kubepods.slice/kubepods-pod" UID_US ".slice" },
	{ "kubepods/pod" UID_DASH, "kubepods/pod" UID_DASH },
	{ "system.slice/foo.service/pod" UID2_DASH, "system.slice/foo.service" },
	{ "system.slice/foo.service/a/b", "system.slice/foo.service" },
	{ "user.slice/user-1000.slice/user@1000.service/app.slice/x.scope",
	  "user.slice/user-1000.slice/user@1000.service" },
	{ "docker/" CID "/kubepods/burstable/pod" UID2_DASH, "docker/" CID },
	{ "wbstall", "wbstall" },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wbg_identity id;

		cgroup_identity_parse(cases[i].path, &id);
		CHECK(strcmp(id.runtime, cases[i].runtime) == 0, "[%zu] runtime '%s' (want '%s')", i, id.runtime,
		      cases[i].runtime);
		CHECK(strcmp(id.pod_uid, cases[i].pod) == 0, "[%zu] pod uid '%s'", i, id.pod_uid);
		CHECK(strcmp(id.container_id, cases[i].container) == 0, "[%zu] container id", i);
		CHECK(strcmp(id.unit, cases[i].unit) == 0, "[%zu] unit '%s'", i, id.unit);
		CHECK(id.qos == cases[i].qos, "[%zu] qos %s", i, wbg_qos_to_string(id.qos));
		CHECK(id.is_pod == cases[i].is_pod && id.is_conmon == cases[i].conmon, "[%zu] pod/conmon flags", i);
	}
	for (size_t i = 0; i < sizeof(tenants) / sizeof(tenants[0]); i++) {
		size_t n = cgroup_tenant_len(tenants[i].path);

		CHECK(n == strlen(tenants[i].tenant) && strncmp(tenants[i].path, tenants[i].tenant, n) == 0,
		      "tenant of %s: %.*s", tenants[i].path, (int)n, tenants[i].path);
	}
	return tap_done();
}
