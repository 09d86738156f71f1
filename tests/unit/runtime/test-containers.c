/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "containers.h"
#include "tap.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

int main(void)
{
	struct wbg_containers t;
	const struct wbg_container *c;
	const char *crio_k[] = { "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.kubernetes.container.name",
				 "wbguard.io/dirty-expire", "other" };
	const char *crio_v[] = { "web-0", "shop", "app", "1s", "x" };
	const char *ctrd_k[] = { "io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.sandbox-namespace",
				 "io.kubernetes.cri.container-name" };
	const char *ctrd_v[] = { "db-1", "store", "pg" };
	const char *empty_k[] = { "io.kubernetes.pod.name" }, *empty_v[] = { "" };
	const char *pod, *ns, *name;

	container_k8s_names(crio_k, crio_v, N(crio_k), &pod, &ns, &name);
	CHECK(streq(pod, "web-0") && streq(ns, "shop") && streq(name, "app"), "CRI-O's annotations");
	container_k8s_names(ctrd_k, ctrd_v, N(ctrd_k), &pod, &ns, &name);
	CHECK(streq(pod, "db-1") && streq(ns, "store") && streq(name, "pg"), "containerd's annotations");
	container_k8s_names(empty_k, empty_v, 1, &pod, &ns, &name);
	CHECK(!pod && !ns && !name, "an empty value is no name");

	CHECK(containers_init(&t, 3) == 0, "init");
	CHECK(containers_register(&t, "k/a", "a", "/b/a", crio_k, crio_v, N(crio_k)) == 0, "register a");
	c = containers_find(&t, "k/a");
	CHECK(c && streq(c->id, "a") && streq(c->pod, "web-0") && streq(c->dirty_expire, "1s"), "found by path, fields");
	CHECK(containers_register(&t, "k/b", "b", "/b/b", ctrd_k, ctrd_v, N(ctrd_k)) == 0, "register b");
	CHECK(containers_find(&t, "k/b") && !containers_find(&t, "k/b")->dirty_expire, "b has no expiry annotation");
	CHECK(containers_register(&t, "k/a", "a2", "/b/a2", NULL, NULL, 0) == 0 && containers_count(&t) == 2,
	      "the same path again replaces it");
	c = containers_find(&t, "k/a");
	CHECK(c && streq(c->id, "a2") && !c->pod, "the new registration's fields");
	CHECK(containers_find_id(&t, "a2") == c && !containers_find_id(&t, "a"), "find by id: the latest only");
	CHECK(containers_register(&t, "k/c", "c", "", NULL, NULL, 0) == 0 &&
		      containers_register(&t, "k/d", "d", "", NULL, NULL, 0) == 0,
	      "fill up");
	CHECK(containers_count(&t) == 3 && !containers_find(&t, "k/b") && containers_find(&t, "k/a") && containers_find(&t, "k/d"),
	      "full: the oldest (b) made room");
	containers_forget(&t, "k/a");
	CHECK(containers_count(&t) == 2 && !containers_find(&t, "k/a") && containers_find(&t, "k/c"), "forget");
	CHECK(containers_register(&t, "k/e", "e", "", NULL, NULL, 0) == 0 &&
		      containers_register(&t, "k/f", "f", "", NULL, NULL, 0) == 0 && containers_count(&t) == 3 &&
		      !containers_find(&t, "k/c") && containers_find(&t, "k/d") && containers_find(&t, "k/f"),
	      "after a forget, eviction keeps arrival order");
	containers_forget(&t, "nope");
	CHECK(containers_count(&t) == 3, "forgetting an unknown path is a no-op");
	containers_free(&t);

	/* a pod's cgroup names its pod through the containers below it */
	CHECK(containers_init(&t, 8) == 0 &&
		      containers_register(&t, "kubepods/pod1/c1", "c1", "", crio_k, crio_v, N(crio_k)) == 0 &&
		      containers_register(&t, "kubepods/pod1/c2", "c2", "", crio_k, crio_v, N(crio_k)) == 0 &&
		      containers_register(&t, "kubepods/pod2/c3", "c3", "", ctrd_k, ctrd_v, N(ctrd_k)) == 0,
	      "two pods' containers registered");
	c = containers_find_below(&t, "kubepods/pod1");
	CHECK(c && streq(c->id, "c2") && streq(c->pod, "web-0"), "below the pod's cgroup: the newest of its containers");
	CHECK(streq(containers_find_below(&t, "kubepods/pod2")->pod, "db-1") && !containers_find_below(&t, "kubepods") &&
		      !containers_find_below(&t, "kubepods/pod1/c1"),
	      "only its direct children count");
	containers_forget(&t, "kubepods/pod1/c2");
	c = containers_find_below(&t, "kubepods/pod1");
	CHECK(c && streq(c->id, "c1"), "the newest gone: the other container below names the pod");
	containers_forget(&t, "kubepods/pod1/c1");
	CHECK(!containers_find_below(&t, "kubepods/pod1"), "all gone: none");
	containers_free(&t);
	{
		char longname[400];
		const char *k[] = { "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "wbguard.io/dirty-expire" };
		const char *v[] = { longname, "ns", "1s" };
		struct wbg_container_names nm;

		memset(longname, 'x', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		CHECK(containers_init(&t, 8) == 0 && containers_register(&t, "k/long", "l", "/b/l", k, v, 3) == 0 &&
			      t.values_too_long == 1,
		      "a pod name longer than Kubernetes allows: not kept, counted");
		containers_names(&t, "k/long", &nm);
		CHECK(strcmp(nm.pod, "") == 0 && streq(containers_find(&t, "k/long")->namespace, "ns") &&
			      streq(containers_find(&t, "k/long")->dirty_expire, "1s"),
		      "no pod label from it; its other values kept");
		containers_free(&t);
	}
	{
		/* the pod's uid: NRI's (as io.kubernetes.pod.uid) or containerd's
		 * annotation; kept when the hook's registration lacks it, for
		 * the container and for its pod's cgroup */
		const char *nk[] = { "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.kubernetes.pod.uid" };
		const char *nv[] = { "db", "shop", "0c1d2e3f-aaaa-bbbb-cccc-123456789abc" };
		const char *hk[] = { "io.kubernetes.cri.sandbox-name" }, *hv[] = { "db" };
		const char *ck[] = { "io.kubernetes.cri.sandbox-uid" }, *cv[] = { "11111111-2222-3333-4444-555555555555" };
		struct wbg_container_names nm;

		CHECK(containers_init(&t, 8) == 0 &&
			      containers_register_from(&t, WBG_SOURCE_NRI, "kubepods/pod-x/c1", "c1", NULL, nk, nv, 3) == 0 &&
			      containers_register(&t, "kubepods/pod-x/c1", "c1", "/b", hk, hv, 1) == 0,
		      "pod uid: NRI, then the hook");
		containers_names(&t, "kubepods/pod-x/c1", &nm);
		CHECK(streq(nm.pod_uid, "0c1d2e3f-aaaa-bbbb-cccc-123456789abc"), "pod uid: NRI's kept through the hook's");
		containers_names(&t, "kubepods/pod-x", &nm);
		CHECK(streq(nm.pod_uid, "0c1d2e3f-aaaa-bbbb-cccc-123456789abc"), "pod uid: the pod's cgroup's too");
		CHECK(containers_register(&t, "kubepods/pod-y/c2", "c2", "/b", ck, cv, 1) == 0, "containerd's annotation");
		containers_names(&t, "kubepods/pod-y/c2", &nm);
		CHECK(streq(nm.pod_uid, "11111111-2222-3333-4444-555555555555"), "pod uid: io.kubernetes.cri.sandbox-uid");
		containers_names(&t, "kubepods/none", &nm);
		CHECK(nm.pod_uid && !*nm.pod_uid, "pod uid: blank where unknown, never NULL");
		containers_free(&t);
	}
	{
		/* NRI first (every name, the pod's expiry), then the hook
		 * (containerd's annotations without the allow-list's expiry):
		 * one entry, both sources, nothing lost */
		const char *nk[] = { "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.kubernetes.container.name",
				     "wbguard.io/dirty-expire" };
		const char *nv[] = { "web-1", "shop", "app", "2s" };
		const char *hk[] = { "io.kubernetes.cri.sandbox-name" }, *hv[] = { "web-1" };
		char buf[32];

		CHECK(containers_init(&t, 8) == 0, "init");
		CHECK(containers_register_from(&t, WBG_SOURCE_NRI, "k/c", "c1", NULL, nk, nv, 4) == 0 &&
			      containers_register(&t, "k/c", "c1", "/b/c1", hk, hv, 1) == 0,
		      "NRI then the hook register c1");
		c = containers_find(&t, "k/c");
		CHECK(containers_count(&t) == 1 && c && streq(c->dirty_expire, "2s") && streq(c->name, "app") &&
			      streq(c->namespace, "shop") && streq(c->bundle, "/b/c1"),
		      "merged: NRI's expiry and names kept, the hook's bundle added");
		CHECK(streq(containers_sources_to_string(c->sources, buf, sizeof(buf)), "hook+nri"), "sources: %s", buf);
		CHECK(!c->tracked, "not tracked until its cgroup is");
		containers_set_tracked(&t, "k/c");
		CHECK(containers_register(&t, "k/c", "c1", NULL, hk, hv, 1) == 0 && containers_find(&t, "k/c")->tracked,
		      "tracked: kept through a merge (its departure, not the runtime, forgets it)");
		CHECK(containers_register_from(&t, WBG_SOURCE_NRI, "k/c", "c2", NULL, hk, hv, 1) == 0 &&
			      (c = containers_find(&t, "k/c")) && !c->dirty_expire && c->sources == WBG_SOURCE_NRI && !c->tracked &&
			      containers_count(&t) == 1,
		      "another container at the same path: replaced, not merged");
		containers_free(&t);
	}
	return tap_done();
}
