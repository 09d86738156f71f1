/* SPDX-License-Identifier: GPL-2.0-or-later */
/* deps-cost [N]: what libcgroup would cost where wbguard reads a process's
 * cgroup v2 path by hand (the hook's container init, wbguardd's own cgroup
 * for the scratch memcg): libcgroup's cgroup_init() (it reads the mount
 * table and every controller) and cgroup_get_current_controller_path(),
 * against reading "0::/path" from /proc/PID/cgroup, N calls each. Prints
 * one JSON object. Run on a cgroup v2 host (tests/bench/deps-bench boots
 * one). */
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

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, r_init, r_path;
	char mine[4096] = "";
	char *path = NULL;
	double t0, t_init, t_lib, t_hand;

	t0 = now();
	r_init = cgroup_init();
	t_init = now() - t0;
	r_path = cgroup_get_current_controller_path(getpid(), "memory", &path);
	by_hand(getpid(), mine, sizeof(mine));
	t0 = now();
	for (int i = 0; i < n; i++) {
		char *p = NULL;

		cgroup_get_current_controller_path(getpid(), "memory", &p);
		free(p);
	}
	t_lib = (now() - t0) / n;
	t0 = now();
	for (int i = 0; i < n; i++)
		by_hand(getpid(), mine, sizeof(mine));
	t_hand = (now() - t0) / n;
	printf("{\"cgroup_init\":%d,\"cgroup_init_us\":%.1f,\"libcgroup_path\":%d,\"libcgroup_says\":\"%s\","
	       "\"by_hand_says\":\"%s\",\"libcgroup_us_per_call\":%.2f,\"by_hand_us_per_call\":%.2f,\"calls\":%d}\n",
	       r_init, t_init * 1e6, r_path, path ? path : "", mine, t_lib * 1e6, t_hand * 1e6, n);
	free(path);
	return 0;
}
