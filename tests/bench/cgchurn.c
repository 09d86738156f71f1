/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgchurn: cgroup churn at a paced rate, as a node replacing containers does.
 * Each round creates a cgroup, runs a child in it that appends --bytes to a
 * file of its own and exits (leaving the data dirty), then removes the cgroup
 * as a runtime would (rmdir, retried on EBUSY). The moment each child exited
 * is written out (CLOCK_MONOTONIC), so a watcher's reaction latency can be
 * measured from the event itself.
 *
 * --jobs N runs N such loops side by side, each at rate/N (one loop is
 * bounded by its own round trip: about 50 a second in a TCG guest).
 *
 * --hold N instead creates N empty cgroups, waits for SIGTERM/SIGINT or
 * --seconds, and removes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "wbg-cgroup.h"
#include "clock.h"
#include "wbg-base.h"

static const char *root = "/sys/fs/cgroup", *parent = "churn", *dir = NULL, *label = "c";
static uint64_t bytes = 65536, hold = 0, jobs = 1;
static double rate = 10, seconds = 10;
static volatile int stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int child(const char *cg, uint64_t i)
{
	char p[PATH_MAX], *buf;
	int fd;

	if (cg_enter(root, cg) < 0)
		return 1;
	snprintf(p, sizeof(p), "%s/%s%" PRIu64, dir, label, i);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	buf = malloc(bytes);
	if (fd < 0 || !buf)
		return 1;
	memset(buf, 'c', bytes);
	return write(fd, buf, bytes) == (ssize_t)bytes ? 0 : 1;
}

/* Rounds job, job + jobs, ... of n, paced on the common start t0; each exit
 * is a line "cgroup exit_us" on out, then "= ok errors". */
static void churn_loop(uint64_t n, uint64_t job, double t0, FILE *out)
{
	uint64_t ok = 0, errors = 0;

	for (uint64_t i = job; i < n && !stop; i += jobs) {
		char cg[PATH_MAX];
		char p[PATH_MAX + 16];
		int status;
		pid_t pid;

		mono_sleep_until(t0 + i / rate, &stop);
		snprintf(cg, sizeof(cg), "%s/%s%" PRIu64, parent, label, i);
		snprintf(p, sizeof(p), "%s/%s", root, cg);
		if (mkdir(p, 0755) < 0) {
			errors++;
			continue;
		}
		pid = fork();
		if (pid == 0)
			_exit(child(cg, i));
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			errors++;
			(void)cg_rmdir(root, cg, 1000);
			continue;
		}
		/* the exit is when the kernel flips populated to 0 */
		fprintf(out, "%s %.0f\n", cg, mono_now() * 1e6);
		if (cg_rmdir(root, cg, 5000) < 0)
			errors++;
		else
			ok++;
	}
	fprintf(out, "= %" PRIu64 " %" PRIu64 "\n", ok, errors);
	fflush(out);
}

static int churn(void)
{
	uint64_t n = (uint64_t)(rate * seconds), ok = 0, errors = 0;
	FILE **out = calloc(jobs, sizeof(*out));
	bool first = true;
	double t0;

	if (!out)
		return log_oom();
	for (uint64_t j = 0; j < jobs; j++) {
		out[j] = tmpfile();
		if (!out[j])
			return log_error_errno(errno, "tmpfile");
	}
	t0 = mono_now();
	for (uint64_t j = 0; j < jobs; j++) {
		pid_t pid = fork();

		if (pid < 0)
			return log_error_errno(errno, "fork");
		if (pid == 0) {
			churn_loop(n, j, t0, out[j]);
			_exit(0);
		}
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	printf("{\"label\":\"%s\",\"rate\":%g,\"seconds\":%g,\"bytes\":%" PRIu64 ",\"jobs\":%" PRIu64 ",\"exits\":[",
	       label, rate, seconds, bytes, jobs);
	for (uint64_t j = 0; j < jobs; j++) {
		char line[PATH_MAX + 64], cg[PATH_MAX];
		uint64_t a, b;
		double us;

		rewind(out[j]);
		while (fgets(line, sizeof(line), out[j])) {
			if (sscanf(line, "= %" SCNu64 " %" SCNu64, &a, &b) == 2) {
				ok += a;
				errors += b;
			} else if (sscanf(line, "%4095s %lf", cg, &us) == 2) {
				printf("%s{\"cgroup\":\"%s\",\"exit_us\":%.0f}", first ? "" : ",", cg, us);
				first = false;
			}
		}
		fclose(out[j]);
	}
	free(out);
	printf("],\"done\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"elapsed_s\":%.3f}\n", ok, errors, mono_now() - t0);
	return errors ? 1 : 0;
}

static int hold_many(void)
{
	double t0 = mono_now();
	uint64_t made = 0;

	for (uint64_t i = 0; i < hold; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/%s/%s%" PRIu64, root, parent, label, i);
		if (mkdir(p, 0755) == 0)
			made++;
	}
	printf("{\"held\":%" PRIu64 ",\"create_s\":%.3f}\n", made, mono_now() - t0);
	fflush(stdout);
	while (!stop && (seconds <= 0 || mono_now() - t0 < seconds))
		pause();
	for (uint64_t i = 0; i < hold; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/%s%" PRIu64, parent, label, i);
		(void)cg_rmdir(root, p, 1000);
	}
	return made == hold ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup-root", required_argument, NULL, 'r' }, { "parent", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },	 { "rate", required_argument, NULL, 'R' },
		{ "seconds", required_argument, NULL, 's' },	 { "bytes", required_argument, NULL, 'b' },
		{ "hold", required_argument, NULL, 'H' },	 { "label", required_argument, NULL, 'l' },
		{ "jobs", required_argument, NULL, 'j' },	 {},
	};
	char p[PATH_MAX];
	int c, idx = 0, r = 0;

	while ((c = getopt_long(argc, argv, "", opts, &idx)) >= 0) {
		switch (c) {
		case 'r': root = optarg; break;
		case 'p': parent = optarg; break;
		case 'd': dir = optarg; break;
		case 'l': label = optarg; break;
		case 'R': r = parse_double(optarg, &rate); break;
		case 's': r = parse_double(optarg, &seconds); break;
		case 'b': r = parse_size(optarg, &bytes); break;
		case 'H': r = parse_u64_max(optarg, 1000000, &hold); break;
		case 'j': r = parse_u64_max(optarg, 64, &jobs); if (r >= 0 && jobs == 0) r = -EINVAL; break;
		default: return 2;
		}
		if (r < 0)
			return log_error_errno(r, "Invalid value '%s' for --%s", optarg, opts[idx].name), 2;
	}
	if ((!dir && !hold) || rate <= 0)
		return log_error_errno(EINVAL, "Usage: cgchurn --dir DIR [--rate R] [--seconds S] [--bytes B] [--jobs N] | --hold N"), 2;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	snprintf(p, sizeof(p), "%s/%s", root, parent);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return log_error_errno(errno, "Cannot create %s", p), 1;
	(void)cg_write(root, parent, "cgroup.subtree_control", "+memory");
	return hold ? hold_many() : churn();
}
