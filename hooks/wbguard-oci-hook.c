/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wbguard-oci-hook: OCI runtime hook.
 *
 *   createRuntime  checks the container's state and config.json (a
 *                  malformed one is an error naming the field, exit 1) and
 *                  resolves its cgroup.
 *   poststop       writes back the container's data now: syncfs on the
 *                  filesystems under its writable mounts and its rootfs,
 *                  bounded by --timeout; never fails the runtime's
 *                  lifecycle (exit 0 whatever happens).
 *
 * It only ever touches what the container's own config.json names.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "log.h"
#include "macro.h"
#include "oci.h"
#include "parse-util.h"

static void help(void)
{
	printf("Usage: wbguard-oci-hook [OPTIONS] STAGE < STATE.json\n\n"
	       "OCI hook for wbguard. Reads the container's state (runtime-spec) on stdin.\n\n"
	       "Stages:\n"
	       "  createRuntime  check the state and the bundle's config.json, resolve the\n"
	       "                 container's cgroup; malformed input: exit 1\n"
	       "  poststop       write back the container's data now (syncfs on the\n"
	       "                 filesystems under its writable mounts and rootfs), bounded\n"
	       "                 by --timeout; always exit 0\n\n"
	       "Options:\n"
	       "  -h --help          show this help\n"
	       "     --version       show the version\n"
	       "     --timeout SEC   poststop's bound (default 5)\n");
}

static int load_config(const struct oci_state *s, struct oci_config *ret, char *err, size_t errlen)
{
	_cleanup_close_ int dfd = open(s->bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	int r;

	if (dfd < 0) {
		snprintf(err, errlen, "bundle %.256s: %s", s->bundle, strerror(errno));
		return -errno;
	}
	fd = openat(dfd, "config.json", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "%.256s/config.json: %s", s->bundle, strerror(errno));
		return -errno;
	}
	r = read_small_fd(fd, OCI_CONFIG_MAX + 1, &text, &n);
	if (r < 0) {
		snprintf(err, errlen, "%.256s/config.json: %s", s->bundle, strerror(-r));
		return r;
	}
	return oci_config_parse(text, n, ret, err, errlen);
}

/* syncfs on each distinct filesystem: the rootfs and the sources of the
 * writable bind mounts. Each open is of the container's own paths. */
static int flush_container(const struct oci_state *s, const struct oci_config *c)
{
	dev_t done[OCI_MOUNTS_MAX + 1];
	size_t n_done = 0;
	char root[sizeof(s->bundle) + 8];
	int flushed = 0;

	snprintf(root, sizeof(root), "%s/rootfs", s->bundle);
	for (size_t i = 0; i <= c->n_mounts; i++) {
		const char *path = i == c->n_mounts ? root : c->mounts[i].source;
		_cleanup_close_ int fd = -EBADF;
		struct stat st;
		bool seen = false;

		if (i < c->n_mounts && (!c->mounts[i].bind || !c->mounts[i].rw || path[0] != '/'))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 || fstat(fd, &st) < 0)
			continue; /* gone, or not ours to open: nothing to do */
		for (size_t k = 0; k < n_done; k++)
			seen |= done[k] == st.st_dev;
		if (seen)
			continue;
		done[n_done++] = st.st_dev;
		if (syncfs(fd) < 0)
			log_warning_errno(errno, "syncfs %s", path);
		else
			flushed++;
	}
	return flushed;
}

/* The flush in a child, so a filesystem that hangs in syncfs cannot hold the
 * runtime past the timeout (the child finishes on its own). */
static void poststop(const struct oci_state *s, double timeout)
{
	struct oci_config c = { 0 };
	char err[512];
	struct timespec t0, t;
	pid_t pid;
	int status;

	if (load_config(s, &c, err, sizeof(err)) < 0) {
		log_warning("container %s: %s; nothing flushed", s->id, err);
		return;
	}
	pid = fork();
	if (pid == 0)
		_exit(flush_container(s, &c) >= 0 ? 0 : 1);
	oci_config_done(&c);
	if (pid < 0) {
		log_warning_errno(errno, "container %s: cannot fork the flush", s->id);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			log_info("container %s: its filesystems written back", s->id);
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= timeout) {
			log_warning("container %s: flush still running after %.1f s; leaving it to finish", s->id, timeout);
			return;
		}
		usleep(20 * 1000);
	}
}

static int create_runtime(const struct oci_state *s)
{
	struct oci_config c = { 0 };
	char err[512], cg[PATH_MAX];
	int r;

	if (load_config(s, &c, err, sizeof(err)) < 0)
		return log_error_errno(EINVAL, "container %s: %s", s->id, err);
	r = c.cgroups_path[0] ? oci_cgroup_path(c.cgroups_path, cg, sizeof(cg)) : -ENOENT;
	if (r < 0 && r != -ENOENT) {
		oci_config_done(&c);
		return log_error_errno(r, "container %s: config.json: linux.cgroupsPath '%s' is not a cgroup path",
				       s->id, c.cgroups_path);
	}
	log_info("container %s: cgroup %s", s->id, r < 0 ? "(chosen by the runtime)" : cg);
	oci_config_done(&c);
	return 0;
}

int main(int argc, char **argv)
{
	enum { ARG_VERSION = 256, ARG_TIMEOUT };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "timeout", required_argument, NULL, ARG_TIMEOUT },
		{},
	};
	struct oci_state s;
	_cleanup_free_ char *text = NULL;
	double timeout = 5;
	char err[512];
	size_t n = 0;
	bool post;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("wbguard-oci-hook %s\n", WBGUARD_VERSION);
			return 0;
		case ARG_TIMEOUT:
			if (parse_double(optarg, &timeout) < 0 || timeout <= 0 || timeout > 3600) {
				log_error("--timeout: '%s' is not a number of seconds", optarg);
				return 1;
			}
			break;
		default:
			return 1;
		}
	if (optind >= argc || (strcmp(argv[optind], "createRuntime") != 0 && strcmp(argv[optind], "poststop") != 0)) {
		log_error("The stage must be createRuntime or poststop; see --help");
		return 1;
	}
	post = strcmp(argv[optind], "poststop") == 0;
	r = read_small_fd(STDIN_FILENO, OCI_STATE_MAX + 1, &text, &n);
	if (r < 0) {
		log_error_errno(r, "Cannot read the container state on stdin%s", r == -EFBIG ? " (too large)" : "");
		return post ? 0 : 1;
	}
	if (oci_state_parse(text, n, &s, err, sizeof(err)) < 0) {
		log_error("Bad container state on stdin: %s", err);
		return post ? 0 : 1;
	}
	if (post)
		poststop(&s, timeout);
	else
		r = create_runtime(&s);
	oci_state_done(&s);
	return post || r >= 0 ? 0 : 1;
}
