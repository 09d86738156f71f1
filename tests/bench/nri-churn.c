/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nri-churn: a runtime's side of NRI driving a real wbguardd, for the
 * benchmark (tests/bench/nri-bench). It listens where wbguardd's [nri]
 * socket points, answers its RegisterPlugin, configures it, synchronizes
 * it with PODS pods of 3 containers each, then replaces containers one by
 * one as a churning node does (RemoveContainer of the old one, then
 * PostCreateContainer of its successor), each request timed from send to
 * reply. Containers' cgroups are /wbgbench/podP/cS-G; with --cgroups ROOT
 * (a cgroup2 mount) each is made there for real, and removed before its
 * RemoveContainer as runc's delete does, so wbguardd's handovers run too.
 * Prints one JSON object.
 *   nri-churn --socket PATH --pid PID [--pods 100] [--events 3000]
 *             [--proto v0.8|v0.12] [--cgroups ROOT]
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nri-fake-runtime.h"

typedef Nri__Pkg__Api__V1alpha1__PodSandbox Pod;
typedef Nri__Pkg__Api__V1alpha1__Container Ctr;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* utime + stime in clock ticks, and VmRSS in KiB, of pid */
static int proc_usage(int pid, unsigned long long *ticks, unsigned long *rss_kib)
{
	char path[64], buf[4096], *p;
	unsigned long long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	*ticks = ut + st;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	*rss_kib = 0;
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmRSS: %lu", rss_kib) == 1)
			break;
	if (f)
		fclose(f);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static struct fake_rt rt;
static uint64_t *lat;
static size_t n_lat;
static int failures;

/* One request, timed: 0 when answered OK within NRI's 2 s. */
static int timed(const char *method, const ProtobufCMessage *m)
{
	uint64_t t0 = now_ns();
	uint32_t s = fake_call(&rt, method, m);
	const Ttrpc__Response *r = s ? fake_wait_reply(&rt, s, 2000) : NULL;

	lat[n_lat++] = now_ns() - t0;
	if (!r || (r->status && r->status->code)) {
		failures++;
		return -1;
	}
	return 0;
}

static int event(const char *proto, int kind, const char *method, Pod *p, Ctr *c)
{
	if (strcmp(proto, "v0.12") == 0) {
		Nri__Pkg__Api__V1alpha1__PodContainerRequest req = NRI__PKG__API__V1ALPHA1__POD_CONTAINER_REQUEST__INIT;

		req.pod = p;
		req.container = c;
		return timed(method, &req.base);
	} else {
		Nri__Pkg__Api__V1alpha1__StateChangeEvent req = NRI__PKG__API__V1ALPHA1__STATE_CHANGE_EVENT__INIT;

		req.event = kind;
		req.pod = p;
		req.container = c;
		return timed("StateChange", &req.base);
	}
}

static const char *cgroot; /* --cgroups: where they are made */

/* A container's cgroup, relative to the cgroupfs root as NRI says it,
 * made for real with --cgroups. */
static void cg_make(char *buf, size_t size, unsigned pod, unsigned gen, unsigned slot)
{
	char real[600];

	snprintf(buf, size, "/wbgbench/pod%u/c%u-%u", pod, slot, gen);
	if (cgroot) {
		snprintf(real, sizeof(real), "%s%s", cgroot, buf);
		mkdir(real, 0755);
	}
}

static void cg_remove(const char *rel)
{
	char real[600];

	if (cgroot) {
		snprintf(real, sizeof(real), "%s%s", cgroot, rel);
		rmdir(real);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "pid", required_argument, NULL, 'p' },
		{ "pods", required_argument, NULL, 'n' },   { "events", required_argument, NULL, 'e' },
		{ "proto", required_argument, NULL, 'v' },  { "cgroups", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *proto = "v0.8";
	unsigned pods = 100, events = 3000, per = 3;
	int pid = 0, lfd, fd, o;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	unsigned long long t_sync0, t_churn0, t_end;
	unsigned long rss_idle, rss_synced, rss_end;
	uint64_t sync_ns, churn_ns;
	Pod **pod;
	Ctr **ctr;
	unsigned *gen;
	char id[64], path[512], rel[512];
	struct pollfd pfd;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) >= 0)
		switch (o) {
		case 's': sock = optarg; break;
		case 'p': pid = atoi(optarg); break;
		case 'n': pods = (unsigned)atoi(optarg); break;
		case 'e': events = (unsigned)atoi(optarg); break;
		case 'v': proto = optarg; break;
		case 'c': cgroot = optarg; break;
		default: return 2;
		}
	if (!sock || pid <= 0 || pods == 0 || events == 0 || strlen(sock) >= sizeof(sa.sun_path) ||
	    (strcmp(proto, "v0.8") && strcmp(proto, "v0.12"))) {
		fprintf(stderr, "usage: nri-churn --socket PATH --pid PID [--pods N] [--events N] [--proto v0.8|v0.12] "
				"[--cgroups ROOT]\n");
		return 2;
	}
	memcpy(sa.sun_path, sock, strlen(sock));
	unlink(sock);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0) {
		perror("nri-churn: listen");
		return 1;
	}
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	if (poll(&pfd, 1, 60000) <= 0 || (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		fprintf(stderr, "nri-churn: wbguardd did not connect within 60 s\n");
		return 1;
	}
	fake_init(&rt, fd);
	lat = calloc(events * 2 + 8, sizeof(*lat));
	pod = calloc(pods, sizeof(*pod));
	ctr = calloc(pods * per, sizeof(*ctr));
	gen = calloc(pods * per, sizeof(*gen));
	for (int i = 0; i < 100 && !rt.call; i++)
		fake_pump(&rt, 100);
	if (!rt.call || fake_answer_register(&rt, 0, NULL) < 0) {
		fprintf(stderr, "nri-churn: no RegisterPlugin from wbguardd\n");
		return 1;
	}
	{
		Nri__Pkg__Api__V1alpha1__ConfigureRequest req = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;

		req.runtime_name = (char *)"nri-churn";
		req.runtime_version = (char *)proto;
		if (strcmp(proto, "v0.12") == 0)
			req.nri_version = (char *)"v0.12.2";
		if (timed("Configure", &req.base) < 0) {
			fprintf(stderr, "nri-churn: Configure failed\n");
			return 1;
		}
	}
	for (unsigned p = 0; p < pods; p++) {
		snprintf(id, sizeof(id), "pod%u", p);
		if (cgroot) {
			snprintf(path, sizeof(path), "%s/wbgbench/pod%u", cgroot, p);
			mkdir(path, 0755);
		}
		snprintf(rel, sizeof(rel), "/wbgbench/pod%u/sandbox", p);
		pod[p] = fake_pod(id, id, "bench", rel, p % 2 ? "2s" : NULL);
		for (unsigned c = 0; c < per; c++) {
			unsigned i = p * per + c;

			snprintf(id, sizeof(id), "ctr%u-0", i);
			cg_make(path, sizeof(path), p, 0, c);
			ctr[i] = fake_container(id, pod[p]->id, "app", path, NULL);
		}
	}
	proc_usage(pid, &t_sync0, &rss_idle);
	{
		Nri__Pkg__Api__V1alpha1__SynchronizeRequest req = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
		uint64_t t0 = now_ns();

		req.pods = pod;
		req.n_pods = pods;
		req.containers = ctr;
		req.n_containers = pods * per;
		if (timed("Synchronize", &req.base) < 0) {
			fprintf(stderr, "nri-churn: Synchronize failed\n");
			return 1;
		}
		sync_ns = now_ns() - t0;
	}
	usleep(200000);
	n_lat = 0; /* the churn's latencies only */
	proc_usage(pid, &t_churn0, &rss_synced);
	{
		uint64_t t0 = now_ns();

		for (unsigned e = 0; e < events; e++) {
			unsigned i = e % (pods * per), p = i / per;
			Ctr *old = ctr[i];

			cg_remove(old->linux->cgroups_path); /* runc delete, before NRI hears */
			event(proto, 11, "RemoveContainer", pod[p], old);
			gen[i]++;
			snprintf(id, sizeof(id), "ctr%u-%u", i, gen[i]);
			cg_make(path, sizeof(path), p, gen[i], i % per);
			ctr[i] = fake_container(id, pod[p]->id, "app", path, NULL);
			event(proto, 5, "PostCreateContainer", pod[p], ctr[i]);
			fake_free_container(old);
		}
		churn_ns = now_ns() - t0;
	}
	usleep(500000);
	proc_usage(pid, &t_end, &rss_end);
	qsort(lat, n_lat, sizeof(*lat), cmp_u64);
	{
		long hz = sysconf(_SC_CLK_TCK);

		printf("{\"proto\":\"%s\",\"pods\":%u,\"containers\":%u,\"replacements\":%u,\"requests\":%zu,\"cgroups\":%s,\"failures\":%d,"
		       "\"sync_ms\":%.3f,\"reply_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
		       "\"requests_per_sec\":%.0f,\"cpu_us_per_request\":%.1f,\"sync_cpu_ms\":%.1f,"
		       "\"rss_kib\":{\"before_sync\":%lu,\"synced\":%lu,\"after_churn\":%lu}}\n",
		       proto, pods, pods * per, events, n_lat, cgroot ? "true" : "false", failures, sync_ns / 1e6,
		       lat[n_lat / 2] / 1e3, lat[n_lat * 99 / 100] / 1e3, lat[n_lat - 1] / 1e3, n_lat / (churn_ns / 1e9),
		       (double)(t_end - t_churn0) * 1e6 / hz / n_lat, (double)(t_churn0 - t_sync0) * 1e3 / hz,
		       rss_idle, rss_synced, rss_end);
	}
	for (unsigned i = 0; i < pods * per; i++) {
		cg_remove(ctr[i]->linux->cgroups_path);
		fake_free_container(ctr[i]);
	}
	for (unsigned p = 0; p < pods; p++) {
		if (cgroot) {
			snprintf(path, sizeof(path), "%s/wbgbench/pod%u", cgroot, p);
			rmdir(path);
		}
		fake_free_pod(pod[p]);
	}
	fake_done(&rt);
	free(lat);
	free(pod);
	free(ctr);
	free(gen);
	close(lfd);
	unlink(sock);
	return failures ? 1 : 0;
}
