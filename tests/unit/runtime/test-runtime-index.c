/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The runtime state cache: a lookup costs what it concerns. 300 crun
 * containers; a tenant's cgroups that are no container are looked up a
 * thousand times; each container's state is parsed once. New, late-written
 * and removed containers are seen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime-index.h"
#include "tap.h"

static void put_crun(const char *root, const char *id, const char *cgroup, const char *expire)
{
	char d[512], p[600];
	FILE *f;

	snprintf(d, sizeof(d), "%s/%s", root, id);
	mkdir(d, 0700);
	snprintf(p, sizeof(p), "%s/status", d);
	if (!(f = fopen(p, "w")))
		return;
	fprintf(f, "{\"pid\": 1, \"cgroup-path\": \"%s\", \"bundle\": \"/b/%s\"}\n", cgroup, id);
	fclose(f);
	snprintf(p, sizeof(p), "%s/config.json", d);
	if (!(f = fopen(p, "w")))
		return;
	fprintf(f, "{\"annotations\": {\"wbguard.io/dirty-expire\": \"%s\"}}\n", expire);
	fclose(f);
}

int main(void)
{
	char tmp[] = "/tmp/wbg-rtidx.XXXXXX", crun[300], runc[300], cmd[400], p[600];
	const char *roots[3];
	struct runtime_index *x = NULL;
	struct runtime_index_stats st;
	struct wbg_container_state s;
	int misses = 0;

	if (!mkdtemp(tmp))
		return 1;
	snprintf(crun, sizeof(crun), "%s/crun", tmp);
	snprintf(runc, sizeof(runc), "%s/runc", tmp);
	mkdir(crun, 0700);
	mkdir(runc, 0700);
	for (int i = 0; i < 300; i++) {
		char id[32], cg[64];

		snprintf(id, sizeof(id), "c%d", i);
		snprintf(cg, sizeof(cg), "/pods/p%d/c%d", i, i);
		put_crun(crun, id, cg, "5s");
	}
	roots[0] = "/nonexistent";
	roots[1] = crun;
	roots[2] = runc;
	CHECK(runtime_index_new(&x) == 0, "new");
	CHECK(runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "pods/p7/c7", &s) == 1 && strcmp(s.id, "c7") == 0 &&
		      strcmp(s.runtime, "crun") == 0 && strcmp(runtime_state_annotation(&s, "wbguard.io/dirty-expire"), "5s") == 0,
	      "a container found by its cgroup, its annotation with it");
	runtime_state_done(&s);
	CHECK(runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "/pods/p8/c8/", &s) == 1 && strcmp(s.id, "c8") == 0,
	      "leading and trailing slashes do not matter");
	runtime_state_done(&s);
	for (int i = 0; i < 1000; i++) {
		char cg[64];

		snprintf(cg, sizeof(cg), "tenant/sub%d", i);
		misses += runtime_index_find(x, roots, 3, "/sys/fs/cgroup", cg, &s) == 0;
	}
	runtime_index_stats(x, &st);
	CHECK(misses == 1000, "a tenant's 1,000 cgroups are no container");
	CHECK(st.parses == 300 && st.containers == 300,
	      "each of the 300 containers' state parsed once, whatever was looked up (%llu parses, %zu containers)",
	      (unsigned long long)st.parses, st.containers);
	/* runc makes its directory, then writes state.json once its init is
	 * in the cgroup: not found before, found after, parsed then */
	snprintf(p, sizeof(p), "%s/late", runc);
	mkdir(p, 0711);
	CHECK(runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "pods/late", &s) == 0, "a container without its state yet");
	snprintf(cmd, sizeof(cmd), "%s/late/state.json", runc);
	{
		FILE *f = fopen(cmd, "w");

		if (f) {
			fputs("{\"id\":\"late\",\"config\":{\"labels\":[\"wbguard.io/dirty-expire=2s\"],"
			      "\"cgroups\":{\"path\":\"/pods/late\"}}}",
			      f);
			fclose(f);
		}
	}
	CHECK(runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "pods/late", &s) == 1 && strcmp(s.runtime, "runc") == 0 &&
		      strcmp(runtime_state_annotation(&s, "wbguard.io/dirty-expire"), "2s") == 0,
	      "its state once written");
	runtime_state_done(&s);
	/* a container created after the roots were listed */
	put_crun(crun, "new", "/pods/new", "1s");
	CHECK(runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "pods/new", &s) == 1 && strcmp(s.id, "new") == 0,
	      "a container created later is found");
	runtime_state_done(&s);
	/* removed: gone from the index */
	snprintf(cmd, sizeof(cmd), "rm -rf %s/c7", crun);
	CHECK(system(cmd) == 0, "a container's state removed");
	CHECK(runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "pods/p7/c7", &s) == 0, "a removed container is not found");
	runtime_index_stats(x, &st);
	CHECK(st.containers == 301, "and not kept (%zu containers)", st.containers);
	/* a runtime's whole root going away */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", runc);
	CHECK(system(cmd) == 0 && runtime_index_find(x, roots, 3, "/sys/fs/cgroup", "pods/late", &s) == 0,
	      "a root removed: its containers are gone");
	runtime_index_free(x);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
