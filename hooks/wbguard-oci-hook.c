/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wbguard-oci-hook: OCI runtime hook.
 *
 *   createRuntime  checks the container's state and config.json, resolves
 *                  its cgroup and registers the container with wbguardd
 *                  (id, cgroup, bundle, annotations). Input it cannot
 *                  take is logged, naming the field, and the container
 *                  runs (exit 0): a best-effort agent never refuses a
 *                  container the runtime would run. A config.json it
 *                  cannot read is registered by its init's cgroup alone.
 *                  --strict: exit 1 instead, for operators who want it.
 *   poststop       asks wbguardd to write back the container's cgroup now
 *                  and waits, bounded by --timeout. If wbguardd is not
 *                  there (or does not know the container) it does it
 *                  itself: syncfs on the filesystems under the container's
 *                  writable mounts and its rootfs, bounded the same. Never
 *                  fails the runtime's lifecycle (exit 0 whatever happens).
 *
 * Without a stage argument the state's status says it ("creating" or
 * "created": createRuntime; "stopped": poststop), so one hooks.d file covers
 * both. It only ever names what the container's own state and config.json
 * name, and at poststop only its id: wbguardd flushes the cgroup registered
 * for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include <linux/magic.h>
#include <systemd/sd-bus.h>

#include "wbg-runtime.h"
#include "wbg-flush.h"
#include "wbg-kernel.h"
#include "wbg-base.h"

static void help(void)
{
	printf("Usage: wbguard-oci-hook [OPTIONS] STAGE < STATE.json\n\n"
	       "OCI hook for wbguard. Reads the container's state (runtime-spec) on stdin.\n\n"
	       "Stages (default: from the state's status):\n"
	       "  createRuntime  check the state and the bundle's config.json, resolve the\n"
	       "                 container's cgroup, register it with wbguardd; input it\n"
	       "                 cannot take is logged and the container runs (exit 0)\n"
	       "  poststop       have wbguardd write back the container's cgroup now and\n"
	       "                 wait; without wbguardd, syncfs the filesystems under its\n"
	       "                 writable mounts and rootfs; bounded by --timeout; always\n"
	       "                 exit 0\n\n"
	       "Options:\n"
	       "  -h --help          show this help\n"
	       "     --version       show the version\n"
	       "     --timeout SEC   bound on each stage's work (default 5)\n"
	       "     --socket PATH   wbguardd's control socket (default " WBG_CONTROL_SOCKET ")\n"
	       "     --strict        createRuntime: exit 1 on input it cannot take (the runtime\n"
	       "                     then refuses the container)\n");
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
	if (r == -EFBIG) {
		snprintf(err, errlen, "%.256s/config.json: more than the %d bytes the hook reads", s->bundle,
			 OCI_CONFIG_MAX);
		return -E2BIG; /* valid, but beyond our limit */
	}
	if (r < 0) {
		snprintf(err, errlen, "%.256s/config.json: %s", s->bundle, strerror(-r));
		return r;
	}
	return oci_config_parse(text, n, ret, err, errlen);
}

/* Network and FUSE filesystems have no cgroup writeback (no dying wb to
 * stall on), and their syncfs can hang on a server: never flushed here, as
 * wbguardd's [flush] exclude_fstypes leaves them. */
static bool fs_excluded(long type)
{
	static const long excluded[] = {
		0x6969,     /* NFS */
		0xff534d42, /* CIFS */
		0xfe534d42, /* SMB2 */
		0x517b,     /* SMB */
		0x65735546, /* FUSE */
		0x00c36400, /* Ceph */
		0x01021997, /* 9p */
		0x013111a8, /* Lustre */
	};

	for (size_t i = 0; i < ELEMENTSOF(excluded); i++)
		if ((unsigned long)type == (unsigned long)excluded[i])
			return true;
	return false;
}

/* A directory or regular file at path, opened for syncfs; never a device
 * node (opening one as root can act on the device) nor a network or FUSE
 * filesystem. Looked at through an O_PATH descriptor first, which opens
 * nothing. */
static int open_for_syncfs(const char *path, struct stat *ret, long *ret_fstype)
{
	_cleanup_close_ int pfd = open(path, O_PATH | O_CLOEXEC);
	struct statfs sfs;
	char proc[64];
	int fd;

	if (pfd < 0 || fstat(pfd, ret) < 0)
		return errno > 0 ? -errno : -EIO;
	if (!S_ISDIR(ret->st_mode) && !S_ISREG(ret->st_mode))
		return -ENOTDIR;
	if (fstatfs(pfd, &sfs) < 0)
		return -errno;
	if (fs_excluded((long)sfs.f_type))
		return -EREMOTE;
	*ret_fstype = (long)sfs.f_type;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static const char *arg_socket = WBG_CONTROL_SOCKET;
static bool arg_strict;

/* The fallback's budget lives beside the control socket (the run
 * directory: a test's socket, a test's budget). */
static void budget_dir(char *buf, size_t size)
{
	const char *slash = strrchr(arg_socket, '/');

	if (!slash)
		snprintf(buf, size, ".");
	else
		snprintf(buf, size, "%.*s", slash == arg_socket ? 1 : (int)(slash - arg_socket), arg_socket);
}

/* The filesystem a syncfs of path writes, for the budget: its own, but an
 * overlay's (every container's rootfs, each with a device of its own) is its
 * upper layer's, the node's disk, which every overlay shares. The mount
 * table is read once per exit and only here, on the fallback's way. */
static dev_t budget_key(const char *path, dev_t dev, long fstype, struct wbg_mounts *mounts)
{
	dev_t upper;
	int r;

	if (fstype != OVERLAYFS_SUPER_MAGIC)
		return dev;
	if (!mounts->v) {
		r = mountinfo_read("/proc/self/mountinfo", mounts);
		if (r < 0) {
			log_debug_errno(r, "%s: overlay, mount table unreadable: budgeted as its own filesystem", path);
			return dev;
		}
	}
	r = mountinfo_overlay_upper_dev(mounts, dev, &upper);
	if (r < 0) {
		log_debug_errno(r, "%s: overlay without an upper layer found: budgeted as its own filesystem", path);
		return dev;
	}
	return upper;
}

/* syncfs on each distinct filesystem: the rootfs and the sources of the
 * writable bind mounts, each under the per-filesystem budget every exit
 * without wbguardd shares (hook-budget.h). Each open is of the container's
 * own paths. The rootfs is root.path: absolute (Podman, CRI-O: the
 * storage's merged directory) or relative to the bundle ("rootfs" when
 * absent). */
static int flush_container(const struct oci_state *s, const struct oci_config *c)
{
	char dir[PATH_MAX];
	dev_t done[OCI_MOUNTS_MAX + 1];
	size_t n_done = 0;
	char root[sizeof(s->bundle) + sizeof(c->root_path) + 1];
	_cleanup_(mountinfo_free) struct wbg_mounts mounts = { 0 };
	int flushed = 0;

	budget_dir(dir, sizeof(dir));
	if (c->root_path[0] == '/')
		snprintf(root, sizeof(root), "%s", c->root_path);
	else
		snprintf(root, sizeof(root), "%s/%s", s->bundle, c->root_path[0] ? c->root_path : "rootfs");
	for (size_t i = 0; i <= c->n_mounts; i++) {
		const char *path = i == c->n_mounts ? root : c->mounts[i].source;
		_cleanup_close_ int fd = -EBADF;
		struct stat st = { 0 };
		dev_t key;
		long fstype = 0;
		bool seen = false;
		int r;

		if (i < c->n_mounts && (!c->mounts[i].bind || !c->mounts[i].rw || path[0] != '/'))
			continue;
		fd = open_for_syncfs(path, &st, &fstype);
		if (fd < 0)
			continue; /* gone, a device, remote, not ours to open: nothing to do */
		key = budget_key(path, st.st_dev, fstype, &mounts);
		for (size_t k = 0; k < n_done; k++)
			seen |= done[k] == key;
		if (seen)
			continue;
		done[n_done++] = key;
		r = hook_budget_take(dir, key, control_now_usec(), HOOK_BUDGET_INTERVAL_USEC,
				     control_now_usec() + 100 * 1000);
		if (r <= 0) {
			if (r == 0)
				log_info("container %s: %s: its filesystem was written back less than a second ago "
					 "(the per-filesystem budget); not again", s->id, path);
			else
				log_warning_errno(r, "container %s: %s: the fallback's budget (%s/%s) unusable; not "
						  "flushed", s->id, path, dir, HOOK_BUDGET_FILE);
			continue;
		}
		if (syncfs(fd) < 0)
			log_warning_errno(errno, "syncfs %s", path);
		else
			flushed++;
	}
	return flushed;
}

/* The stage's deadline bounds everything it does with wbguardd. A healthy
 * wbguardd authenticates in milliseconds: one that has not within a quarter
 * of the timeout (at most 1 s) is stopped or stuck, and the rest of the time
 * is the fallback's. */
static uint64_t connect_deadline(uint64_t deadline)
{
	uint64_t now = control_now_usec(), budget = deadline > now ? (deadline - now) / 4 : 0;

	return now + (budget < 1000000 ? budget : 1000000);
}

/* wbguardd writes back what the container's cgroup dirtied and answers when
 * done. Returns 0 when it did (or had nothing to do, or chose not to), < 0
 * when it is not there or does not know the container (the caller flushes
 * itself). */
static int daemon_flush(const struct oci_state *s, uint64_t deadline)
{
	_cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL, *reply = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	const char *outcome, *reason;
	uint64_t id, now;
	int r;

	r = control_connect(arg_socket, connect_deadline(deadline), &bus);
	if (r < 0)
		return log_info_errno(r, "container %s: wbguardd not reachable at %s%s; flushing here", s->id, arg_socket,
				      r == -ETIMEDOUT ? " (it does not answer)" : "");
	/* wbguardd answers "pending" at its end of the time, a little before
	 * ours, so that the answer still reaches us */
	now = control_now_usec();
	r = sd_bus_message_new_method_call(bus, &req, NULL, WBG_BUS_PATH, WBG_BUS_IFACE, "FlushContainer");
	if (r >= 0)
		r = sd_bus_message_append(req, "st", s->id, deadline > now + 200000 ? deadline - now - 200000 : 0);
	if (r >= 0)
		r = control_call(bus, req, deadline, &error, &reply);
	if (r < 0 && (sd_bus_error_has_name(&error, "io.wbguard1.NoSuchCgroup") ||
		      sd_bus_error_has_name(&error, SD_BUS_ERROR_LIMITS_EXCEEDED))) {
		/* wbguardd is there and chose: a cgroup it does not track
		 * (outside [daemon] roots, or past a tenant's share of its
		 * tables: counted there, its removal still covered by the
		 * stall) or too many callers. A syncfs from here would be
		 * outside every budget it keeps. */
		log_info("container %s: wbguardd: %s; not flushed here", s->id, error.message);
		sd_bus_error_free(&error);
		return 0;
	}
	if (r < 0) {
		log_info("container %s: wbguardd: %s; flushing here", s->id, error.message ? error.message : strerror(-r));
		sd_bus_error_free(&error);
		return r;
	}
	r = sd_bus_message_read(reply, "tss", &id, &outcome, &reason);
	if (r < 0)
		return log_info_errno(r, "container %s: bad reply from wbguardd; flushing here", s->id);
	log_info("container %s: wbguardd handover %" PRIu64 ": %s%s%s", s->id, id, outcome, *reason ? ": " : "",
		 reason);
	/* "pending": it is still at it, past our bound; a second flush from
	 * here would only wait for the same pages. */
	return 0;
}

/* The flush in a child, so a filesystem that hangs in syncfs cannot hold the
 * runtime past the timeout (the child finishes on its own). */
static void poststop(const struct oci_state *s, uint64_t deadline)
{
	struct oci_config c = { 0 };
	char err[512];
	pid_t pid;
	int status;

	if (daemon_flush(s, deadline) >= 0)
		return;
	if (load_config(s, &c, err, sizeof(err)) < 0) {
		log_warning("container %s: %s; nothing flushed", s->id, err);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* The runtime reads our stdout and stderr to EOF (runc does):
		 * a child stuck in syncfs must not hold them, nor be in the
		 * runtime's session when we are gone. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		(void)setsid();
		for (int fd = 0; fd < 3 && null >= 0; fd++)
			(void)dup2(null, fd);
		/* nor any other fd the runtime passed us (its sync pipes,
		 * a console socket) */
		if (close_range(3, ~0U, 0) < 0)
			for (int fd = 3; fd < 1024; fd++)
				(void)close(fd);
		_exit(flush_container(s, &c) >= 0 ? 0 : 1);
	}
	oci_config_done(&c);
	if (pid < 0) {
		log_warning_errno(errno, "container %s: cannot fork the flush", s->id);
		return;
	}
	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			log_info("container %s: its filesystems written back", s->id);
			return;
		}
		if (control_now_usec() >= deadline) {
			log_warning("container %s: flush still running at the timeout; leaving it to finish", s->id);
			return;
		}
		usleep(20 * 1000);
	}
}

/* The cgroup the container's init is in ("0::/path" in /proc/PID/cgroup),
 * relative to the cgroupfs root; -ENOENT if it is gone or not on v2. */
static int pid_cgroup(int pid, char *ret, size_t size)
{
	_cleanup_free_ char *text = NULL;
	char p[64];
	const char *line;
	int r;

	snprintf(p, sizeof(p), "/proc/%d/cgroup", pid);
	r = read_small_file_at(AT_FDCWD, p, 64 * 1024, &text);
	if (r < 0)
		return r;
	for (line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, "0::/", 4) == 0) {
			size_t n = strcspn(line + 4, "\n");

			if (n >= size)
				return -ENAMETOOLONG;
			memcpy(ret, line + 4, n);
			ret[n] = 0;
			return 0;
		}
	return -ENOENT;
}

/* Registration is a courtesy: without wbguardd, poststop flushes itself. */
static void daemon_register(const struct oci_state *s, const struct oci_config *c, const char *cgroup,
			    uint64_t deadline)
{
	_cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	int r;

	r = control_connect(arg_socket, deadline, &bus);
	if (r < 0) {
		log_info_errno(r, "container %s: wbguardd not reachable at %s%s; not registered", s->id, arg_socket,
			       r == -ETIMEDOUT ? " (it does not answer)" : "");
		return;
	}
	r = sd_bus_message_new_method_call(bus, &req, NULL, WBG_BUS_PATH, WBG_BUS_IFACE, "RegisterContainer");
	if (r >= 0)
		r = sd_bus_message_append(req, "sss", s->id, cgroup, s->bundle);
	if (r >= 0)
		r = sd_bus_message_open_container(req, 'a', "{ss}");
	/* config.json's annotations; the state's are the same by the spec
	 * (none when config.json could not be read) */
	if (c && c->annotations) {
		json_object_object_foreach(c->annotations, k, v)
			if (r >= 0 && json_object_is_type(v, json_type_string))
				r = sd_bus_message_append(req, "{ss}", k, json_object_get_string(v));
	}
	if (r >= 0)
		r = sd_bus_message_close_container(req);
	if (r >= 0)
		r = control_call(bus, req, deadline, &error, NULL);
	if (r < 0)
		log_warning("container %s: wbguardd refused the registration: %s", s->id,
			    error.message ? error.message : strerror(-r));
	else
		log_info("container %s: registered with wbguardd", s->id);
	sd_bus_error_free(&error);
}

static int create_runtime(const struct oci_state *s, uint64_t deadline)
{
	struct oci_config c = { 0 };
	char err[512], cg[PATH_MAX] = "", actual[PATH_MAX];
	size_t n;
	int r;

	r = load_config(s, &c, err, sizeof(err));
	if (r == -E2BIG) {
		/* a valid container the hook cannot take in: never its failure */
		log_warning("container %s: %s: beyond the hook's limits; not registered", s->id, err);
		return 0;
	}
	if (r < 0 && arg_strict)
		return log_error_errno(EINVAL, "container %s: %s", s->id, err);
	if (r < 0) {
		/* what the runtime runs is its business: register what can be
		 * known without config.json, its init's cgroup */
		oci_config_done(&c);
		if (s->pid > 0 && pid_cgroup(s->pid, actual, sizeof(actual)) >= 0) {
			log_warning("container %s: %s; registered by its init's cgroup /%s, without annotations", s->id,
				    err, actual);
			daemon_register(s, NULL, actual, deadline);
		} else
			log_warning("container %s: %s; not registered", s->id, err);
		return 0;
	}
	r = c.cgroups_path[0] ? oci_cgroup_path(c.cgroups_path, cg, sizeof(cg)) : -ENOENT;
	if (r < 0 && r != -ENOENT && arg_strict) {
		oci_config_done(&c);
		return log_error_errno(r, "container %s: config.json: linux.cgroupsPath '%s' is not a cgroup path",
				       s->id, c.cgroups_path);
	}
	if (r < 0 && r != -ENOENT) {
		/* the runtime made something of it: where its init is tells */
		log_warning("container %s: config.json: linux.cgroupsPath '%s' is not a cgroup path the hook reads; "
			    "its init's cgroup is taken as it stands",
			    s->id, c.cgroups_path);
		r = -ENOENT;
	}
	/* Where its init really is wins; it must be the configured cgroup or
	 * below it (a runtime's own sub-cgroup), or the state names someone
	 * else's process. */
	if (s->pid > 0 && pid_cgroup(s->pid, actual, sizeof(actual)) >= 0) {
		n = r >= 0 ? strlen(cg) : 0;
		if (r >= 0 && !(strncmp(actual, cg, n) == 0 && (actual[n] == 0 || actual[n] == '/'))) {
			oci_config_done(&c);
			return log_error_errno(EINVAL,
					       "container %s: state: 'pid' %d is in cgroup /%s, not in config.json's "
					       "linux.cgroupsPath (/%s)",
					       s->id, s->pid, actual, cg);
		}
		snprintf(cg, sizeof(cg), "%s", actual);
		r = 0;
	}
	if (r < 0) {
		log_info("container %s: cgroup not known yet (chosen by the runtime); not registered", s->id);
		oci_config_done(&c);
		return 0;
	}
	log_info("container %s: cgroup %s", s->id, cg);
	daemon_register(s, &c, cg, deadline);
	oci_config_done(&c);
	return 0;
}

int main(int argc, char **argv)
{
	enum { ARG_VERSION = 256, ARG_TIMEOUT, ARG_SOCKET, ARG_STRICT };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "timeout", required_argument, NULL, ARG_TIMEOUT },
		{ "socket", required_argument, NULL, ARG_SOCKET },
		{ "strict", no_argument, NULL, ARG_STRICT },
		{},
	};
	struct oci_state s;
	_cleanup_free_ char *text = NULL;
	double timeout = 5;
	char err[512];
	size_t n = 0;
	uint64_t deadline = control_now_usec();
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
		case ARG_SOCKET:
			arg_socket = optarg;
			break;
		case ARG_STRICT:
			arg_strict = true;
			break;
		default:
			return 1;
		}
	/* from the start: the whole stage, reading the state included */
	deadline += (uint64_t)(timeout * 1e6);
	if (optind < argc && strcmp(argv[optind], "createRuntime") != 0 && strcmp(argv[optind], "poststop") != 0) {
		log_error("The stage must be createRuntime or poststop; see --help");
		return 1;
	}
	/* Unknown without an argument until the state is read: a bad state is
	 * exit 1 only with --strict, and never a poststop's. */
	post = optind < argc && strcmp(argv[optind], "poststop") == 0;
	r = read_small_fd(STDIN_FILENO, OCI_STATE_MAX + 1, &text, &n);
	if (r < 0) {
		log_error_errno(r, "Cannot read the container state on stdin%s", r == -EFBIG ? " (too large)" : "");
		return post || !arg_strict ? 0 : 1;
	}
	if (oci_state_parse(text, n, &s, err, sizeof(err)) < 0) {
		log_error("Bad container state on stdin: %s", err);
		return post || !arg_strict ? 0 : 1;
	}
	if (optind >= argc) {
		if (strcmp(s.status, "stopped") == 0)
			post = true;
		else if (strcmp(s.status, "creating") != 0 && strcmp(s.status, "created") != 0) {
			log_error("state: 'status' is '%s'; without a stage argument it must be creating, created "
				  "or stopped",
				  s.status);
			oci_state_done(&s);
			return arg_strict ? 1 : 0;
		}
	}
	if (post)
		poststop(&s, deadline);
	else
		r = create_runtime(&s, deadline);
	if (!post && r < 0 && !arg_strict) {
		/* never a refusal of a container the runtime would run */
		log_warning("container %s: not registered; it runs (--strict would refuse it)", s.id);
		r = 0;
	}
	oci_state_done(&s);
	return post || r >= 0 ? 0 : 1;
}
