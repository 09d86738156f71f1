/* SPDX-License-Identifier: GPL-2.0-or-later */
/* deps-cost [N [CONTROLLER [ROOT REL DEPTH]]]: what libcgroup would cost
 * where wbguard reads a cgroup by hand. A process's cgroup v2 path (the
 * hook's container init, wbguardd's own cgroup for the scratch memcg):
 * libcgroup's cgroup_init() (it reads the mount table and every controller)
 * and cgroup_get_current_controller_path(CONTROLLER, default memory),
 * against reading "0::/path" from /proc/PID/cgroup, N calls each. With
 * ROOT (a cgroup v2 mount), REL and DEPTH also the rescan's walk: wbguardd's
 * cg_list_ids(ROOT/REL, DEPTH) against cgroup_walk_tree_begin/next(
 * CONTROLLER, REL, DEPTH), each once, with how many cgroups each reports.
 * Prints one JSON object. Run on a cgroup v2 host (tests/bench/deps-bench
 * boots one; tests/bench/deps-walk makes the trees). */
#include "wbg-cgroup.h"
#include <libcgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int by_hand(pid_t pid, char *out, size_t n)
{
	char p[64], buf[4096], *s, *e;
	size_t k;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return -1;
	k = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[k] = 0;
	s = strstr(buf, "0::/");
	if (!s)
		return -1;
	s += 3;
	e = strchr(s, '\n');
	if (e)
		*e = 0;
	snprintf(out, n, "%s", s);
	return 0;
}

/* "walk":{...}: both walks of ROOT/REL, DEPTH levels, timed once each */
static void walk(const char *controller, const char *root, const char *rel, int depth)
{
	char full[4096];
	struct cgroup_file_info info;
	void *h = NULL;
	uint64_t *ids = NULL;
	size_t n_ours = 0;
	long n_lib = 0;
	int base, r_ours, r_lib;
	double t0, t_ours, t_lib;

	snprintf(full, sizeof(full), "%s/%s", root, rel);
	t0 = now();
	r_ours = cg_list_ids(full, (unsigned)depth, &ids, &n_ours);
	t_ours = now() - t0;
	free(ids);
	t0 = now();
	r_lib = cgroup_walk_tree_begin(controller, rel, depth, &h, &info, &base);
	if (r_lib == 0) {
		(void)cgroup_walk_tree_set_flags(&h, CGROUP_WALK_TYPE_PRE_DIR);
		do
			n_lib += info.type == CGROUP_FILE_TYPE_DIR;
		while ((r_lib = cgroup_walk_tree_next(depth, &h, &info, base)) == 0);
		cgroup_walk_tree_end(&h);
		if (r_lib == ECGEOF)
			r_lib = 0;
	}
	t_lib = now() - t0;
	printf(",\"walk\":{\"rel\":\"%s\",\"depth\":%d,\"ours\":%d,\"ours_cgroups\":%zu,\"ours_ms\":%.2f,"
	       "\"libcgroup\":%d,\"libcgroup_cgroups\":%ld,\"libcgroup_ms\":%.2f}",
	       rel, depth, r_ours, n_ours, t_ours * 1e3, r_lib, n_lib, t_lib * 1e3);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, r_init, r_path;
	const char *controller = argc > 2 ? argv[2] : "memory";
	char mine[4096] = "";
	char *path = NULL;
	double t0, t_init, t_lib, t_hand;

	t0 = now();
	r_init = cgroup_init();
	t_init = now() - t0;
	r_path = cgroup_get_current_controller_path(getpid(), controller, &path);
	by_hand(getpid(), mine, sizeof(mine));
	t0 = now();
	for (int i = 0; i < n; i++) {
		char *p = NULL;

		cgroup_get_current_controller_path(getpid(), controller, &p);
		free(p);
	}
	t_lib = (now() - t0) / n;
	t0 = now();
	for (int i = 0; i < n; i++)
		by_hand(getpid(), mine, sizeof(mine));
	t_hand = (now() - t0) / n;
	printf("{\"cgroup_init\":%d,\"cgroup_init_us\":%.1f,\"libcgroup_path\":%d,\"libcgroup_says\":\"%s\","
	       "\"by_hand_says\":\"%s\",\"libcgroup_us_per_call\":%.2f,\"by_hand_us_per_call\":%.2f,\"calls\":%d,"
	       "\"controller\":\"%s\",\"libcgroup_version\":\"%s\"",
	       r_init, t_init * 1e6, r_path, path ? path : "", mine, t_lib * 1e6, t_hand * 1e6, n, controller,
	       LIBCGROUP_VERSION);
	if (argc > 5)
		walk(controller, argv[3], argv[4], atoi(argv[5]));
	printf("}\n");
	free(path);
	return 0;
}
