/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fixtures copied from what crun 1.8 and runc 1.1 wrote in the VM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime-state.h"
#include "tap.h"

static void write_file(const char *dir, const char *name, const char *s)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	fputs(s, f);
	fclose(f);
}

int main(void)
{
	char tmp[] = "/tmp/wbg-rt.XXXXXX", crun[300], runc[300], d[400];
	struct wbg_container_state s;
	const char *roots[3];

	if (!mkdtemp(tmp))
		return 1;
	snprintf(crun, sizeof(crun), "%s/crun", tmp);
	snprintf(runc, sizeof(runc), "%s/runc", tmp);
	mkdir(crun, 0700);
	mkdir(runc, 0700);
	snprintf(d, sizeof(d), "%s/ctr-a", crun);
	mkdir(d, 0700);
	write_file(d, "status",
		   "{\n    \"pid\": 129,\n    \"cgroup-path\": \"/wbgtest/ctr-a\",\n    \"scope\": \"\",\n"
		   "    \"rootfs\": \"rootfs\",\n    \"systemd-cgroup\": false,\n    \"bundle\": \"/tmp/bundle\"\n}\n");
	write_file(d, "config.json",
		   "{\"ociVersion\":\"1.0.0\",\"annotations\":{\"wbguard.io/dirty-expire\":\"5s\",\"x\":\"y\"}}");
	snprintf(d, sizeof(d), "%s/ctr-b", runc);
	mkdir(d, 0711);
	write_file(d, "state.json",
		   "{\"id\":\"ctr-b\",\"config\":{\"labels\":[\"wbguard.io/dirty-expire=2s\",\"bundle=/tmp/bundle-b\","
		   "\"k=v=w\"],\"cgroups\":{\"path\":\"/wbgtest/ctr-b\"}},"
		   "\"cgroup_paths\":{\"\":\"/sys/fs/cgroup/wbgtest/ctr-b\"}}");
	snprintf(d, sizeof(d), "%s/broken", runc);
	mkdir(d, 0711);
	write_file(d, "state.json", "{\"id\": \"bro");

	roots[0] = "/nonexistent";
	roots[1] = crun;
	roots[2] = runc;
	CHECK(runtime_state_find(roots, 3, "/sys/fs/cgroup", "wbgtest/ctr-a", &s) == 1 && strcmp(s.id, "ctr-a") == 0 &&
		      strcmp(s.runtime, "crun") == 0 && strcmp(s.bundle, "/tmp/bundle") == 0,
	      "crun container found by its cgroup (missing roots skipped)");
	CHECK(runtime_state_annotation(&s, "wbguard.io/dirty-expire") &&
		      strcmp(runtime_state_annotation(&s, "wbguard.io/dirty-expire"), "5s") == 0,
	      "crun: annotation from config.json");
	runtime_state_done(&s);
	CHECK(runtime_state_find(roots, 3, "/sys/fs/cgroup", "/wbgtest/ctr-b/", &s) == 1 && strcmp(s.id, "ctr-b") == 0 &&
		      strcmp(s.runtime, "runc") == 0 && strcmp(s.bundle, "/tmp/bundle-b") == 0,
	      "runc container found (leading and trailing '/' ignored)");
	CHECK(strcmp(runtime_state_annotation(&s, "wbguard.io/dirty-expire"), "2s") == 0 &&
		      strcmp(runtime_state_annotation(&s, "k"), "v=w") == 0 && !runtime_state_annotation(&s, "bundle"),
	      "runc: annotations from labels, split at the first '='; bundle is not one");
	runtime_state_done(&s);
	CHECK(runtime_state_find(roots, 3, "/sys/fs/cgroup", "wbgtest/ctr-c", &s) == 0,
	      "no container for another cgroup; a broken state file is skipped");
	CHECK(runtime_state_find(roots, 3, "/sys/fs/cgroup", "wbgtest", &s) == 0, "a parent cgroup is not a match");
	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd) != 0)
			return 1;
	}
	return tap_done();
}
