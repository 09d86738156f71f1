/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wbstall: the dying-wb stall as a program (seed 000's harness, scaled).
 *
 * An "old" cgroup appends to N files at a paced rate and exits with them
 * dirty. Its cgroup is then removed (--mode removed) or kept (--mode alive,
 * the control), optionally after syncfs() passes (--syncs). After a pause a
 * "new" sibling keeps appending to the same files at the same rate under the
 * parent's memory.max; how far it falls behind schedule, second by second, is
 * the stall. cgroup_writeback_by_id() results are counted by wbguard's own
 * BPF program. Everything is written as one JSON object.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "clock.h"
#include "lag.h"
#include "wbg-base.h"

#define CHUNK (64 * 1024)
#define MAX_SECS 3600

static struct {
	const char *dir, *cgroup_root, *name, *json;
	uint64_t files, parent_max, syncs;
	double rate_mib, old_secs, new_secs, pause, deadline;
	bool removed, bpf, here;
} arg = {
	.cgroup_root = "/sys/fs/cgroup",
	.name = "wbstall",
	.files = 100,
	.parent_max = 256ULL << 20,
	.rate_mib = 16,
	.old_secs = 5,
	.new_secs = 40,
	.pause = 3,
	.removed = true,
	.bpf = true,
};

/* What a writer child reports back through shared memory, as it goes: a
 * writer stopped at its deadline while asleep in balance_dirty_pages() has
 * its lag counted up to the stop by the parent. */
struct writer_result {
	struct lag_tracker t;
	double start, blocked_since; /* blocked_since: a write is under way */
	uint64_t written;
	double elapsed, worst;
	bool completed, stopped;
	size_t n_sec;
	double per_sec[MAX_SECS];
};

static int reopen(int *fds, uint64_t i)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/wbstall.%" PRIu64, arg.dir, i);
	close(fds[i]);
	fds[i] = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fds[i] < 0)
		return log_error_errno(errno, "Cannot reopen %s", p);
	return 0;
}

/* Round-robin paced appends of CHUNK bytes to every file, in the cgroup
 * given, for secs seconds worth of data at the given rate. Runs in a child
 * so the cgroup can be left (and removed) when it exits. */
static int writer(const char *cgroup, double secs, double deadline, struct writer_result *res)
{
	uint64_t total = (uint64_t)(arg.rate_mib * (1 << 20) * secs);
	_cleanup_free_ int *fds = NULL;
	_cleanup_free_ char *buf = NULL;
	struct lag_tracker *t = &res->t;
	double start;
	int r;

	r = cgroup ? cg_enter(arg.cgroup_root, cgroup) : 0;
	if (r < 0)
		return log_error_errno(r, "Cannot join cgroup %s", cgroup);
	fds = calloc(arg.files, sizeof(int));
	buf = malloc(CHUNK);
	if (!fds || !buf)
		return log_oom();
	memset(buf, 'w', CHUNK);
	for (uint64_t i = 0; i < arg.files; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/wbstall.%" PRIu64, arg.dir, i);
		fds[i] = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fds[i] < 0)
			return log_error_errno(errno, "Cannot open %s", p);
	}

	start = mono_now();
	lag_init(t, start, arg.rate_mib * (1 << 20), res->per_sec, MAX_SECS);
	res->start = start;
	for (uint64_t i = 0; t->written < total; i++) {
		double s;

		mono_sleep_until(lag_next_due(t), NULL);
		s = mono_now();
		if (s > start + deadline)
			break;
		res->blocked_since = s;
		if (write(fds[i % arg.files], buf, CHUNK) != CHUNK)
			return log_error_errno(errno, "write");
		lag_record(t, CHUNK, s, mono_now());
		res->blocked_since = 0;
		/* Reopen each file once after its first append, as a writer that
		 * opens per append (seed 000's dd loop, log shippers) does. On XFS
		 * only the first dirty close flushes delalloc blocks
		 * (xfs_release sets XFS_IDIRTY_RELEASE), so without this the
		 * writer's exit would write its data back and hide the stall. */
		if (i < arg.files) {
			r = reopen(fds, i);
			if (r < 0)
				return r;
		}
	}
	res->elapsed = mono_now() - start;
	res->written = t->written;
	res->worst = t->worst;
	res->completed = t->written >= total;
	res->n_sec = lag_seconds(t, mono_now());
	for (uint64_t i = 0; i < arg.files; i++)
		close(fds[i]);
	return 0;
}

/* A killed writer is gone within a second unless the kernel holds it in an
 * uninterruptible sleep: then what it sleeps in is the result, not a run
 * that never ends. */
static int reap_killed(pid_t pid, int *status)
{
	double stop = mono_now() + 30;
	char p[64], stack[2048] = "";
	FILE *f;
	size_t n;

	while (mono_now() < stop) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w < 0)
			return log_error_errno(errno, "waitpid");
		if (w == pid)
			return 0;
		mono_sleep_until(mono_now() + 0.05, NULL);
	}
	snprintf(p, sizeof(p), "/proc/%d/stack", (int)pid);
	f = fopen(p, "re");
	if (f) {
		n = fread(stack, 1, sizeof(stack) - 1, f);
		stack[n] = 0;
		fclose(f);
	}
	return log_error_errno(ETIMEDOUT, "Writer %d still alive 30 s after SIGKILL; its kernel stack:\n%s", (int)pid, stack);
}

/* The deadline holds even for a writer asleep in balance_dirty_pages():
 * a second past it the writer is killed (a fatal signal ends the throttle
 * loop) and what it did so far, with the lag of the write it was stuck in,
 * is the result. So a stall of minutes costs the run its deadline, not
 * minutes. */
static int run_writer(const char *cgroup, double secs, double deadline, struct writer_result *res)
{
	int status, r;
	double stop = mono_now() + deadline + 1;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	pid = fork();
	if (pid < 0)
		return log_error_errno(errno, "fork");
	if (pid == 0)
		_exit(writer(cgroup, secs, deadline, res) < 0 ? 1 : 0);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w < 0)
			return log_error_errno(errno, "waitpid");
		if (w == pid)
			break;
		if (mono_now() > stop) {
			double now;

			(void)kill(pid, SIGKILL);
			r = reap_killed(pid, &status);
			if (r < 0)
				return r;
			if (res->start == 0)
				return log_error_errno(ETIMEDOUT, "Writer in %s never started", cgroup ?: "this cgroup");
			now = mono_now();
			if (res->blocked_since > 0)
				lag_stopped(&res->t, res->blocked_since, now);
			res->stopped = true;
			res->elapsed = now - res->start;
			res->written = res->t.written;
			res->worst = res->t.worst;
			res->n_sec = lag_seconds(&res->t, now);
			return 0;
		}
		mono_sleep_until(mono_now() + 0.05, NULL);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return log_error_errno(EIO, "Writer in %s failed", cgroup ?: "this cgroup");
	return 0;
}

static int do_syncfs(void)
{
	_cleanup_close_ int fd = open(arg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || syncfs(fd) < 0)
		return log_error_errno(errno, "syncfs(%s)", arg.dir);
	return 0;
}

struct wbid_sum {
	uint64_t old_id;
	struct json_object *series, *old, *all;
};

static void bump(struct json_object *o, const char *k, uint64_t n)
{
	struct json_object *v;
	int64_t cur = json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;

	json_object_object_add(o, k, json_object_new_int64(cur + (int64_t)n));
}

static int wbid_cb(uint64_t cgroup_id, const struct wbg_wbid_counts *n, void *userdata)
{
	struct wbid_sum *s = userdata;

	for (unsigned r = 0; r < _WBG_WBID_RESULT_MAX; r++)
		for (unsigned st = 0; st < 3; st++) {
			struct json_object *e;

			if (!n->n[r][st])
				continue;
			e = json_object_new_object();
			json_object_object_add(e, "cgroup_id", json_object_new_uint64(cgroup_id));
			json_object_object_add(e, "result", json_object_new_string(wbg_wbid_result_to_string(r)));
			json_object_object_add(e, "target", json_object_new_string(wbg_target_state_to_string(st)));
			json_object_object_add(e, "count", json_object_new_uint64(n->n[r][st]));
			json_object_array_add(s->series, e);
			bump(s->all, wbg_wbid_result_to_string(r), n->n[r][st]);
			if (cgroup_id == s->old_id)
				bump(s->old, wbg_wbid_result_to_string(r), n->n[r][st]);
		}
	return 0;
}

static struct json_object *lag_array(const struct writer_result *w)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < w->n_sec; i++)
		json_object_array_add(a, json_object_new_double(round(w->per_sec[i] * 1000) / 1000));
	return a;
}

static void cleanup_files(void)
{
	for (uint64_t i = 0; i < arg.files; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/wbstall.%" PRIu64, arg.dir, i);
		(void)unlink(p);
	}
}

/* The run's parameters. */
static struct json_object *params_json(void)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "files", json_object_new_uint64(arg.files));
	json_object_object_add(o, "rate_mib_s", json_object_new_double(arg.rate_mib));
	json_object_object_add(o, "new_secs", json_object_new_double(arg.new_secs));
	json_object_object_add(o, "deadline_secs", json_object_new_double(arg.deadline));
	if (!arg.here) {
		json_object_object_add(o, "parent_max_bytes", json_object_new_uint64(arg.parent_max));
		json_object_object_add(o, "old_secs", json_object_new_double(arg.old_secs));
		json_object_object_add(o, "pause_secs", json_object_new_double(arg.pause));
	}
	return o;
}

/* The new writer's result. */
static struct json_object *writer_json(const struct writer_result *w)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "bytes_written", json_object_new_uint64(w->written));
	json_object_object_add(o, "bytes_due", json_object_new_uint64((uint64_t)(arg.rate_mib * (1 << 20) * arg.new_secs)));
	json_object_object_add(o, "completed", json_object_new_boolean(w->completed));
	/* killed a second past --deadline, asleep in a write */
	json_object_object_add(o, "stopped_at_deadline", json_object_new_boolean(w->stopped));
	json_object_object_add(o, "elapsed_s", json_object_new_double(round(w->elapsed * 1000) / 1000));
	json_object_object_add(o, "worst_lag_s", json_object_new_double(round(w->worst * 1000) / 1000));
	json_object_object_add(o, "lag_per_sec", lag_array(w));
	return o;
}

static int write_json(struct json_object *j)
{
	int r = 0;

	if (arg.json) {
		if (json_object_to_file_ext(arg.json, j, JSON_C_TO_STRING_PRETTY) < 0)
			r = log_error_errno(EIO, "Cannot write %s: %s", arg.json, json_util_get_last_err());
	} else
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
	json_object_put(j);
	return r;
}

/* --here: the new writer alone, in this process's own cgroup, the files
 * left as they are: a container's workload, whose cgroup the runtime made
 * and removes (a restart in place is two such runs). */
static int run_here(void)
{
	struct writer_result *w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct json_object *j;
	struct utsname u;
	int r;

	if (w == MAP_FAILED)
		return log_oom();
	r = run_writer(NULL, arg.new_secs, arg.deadline, w);
	if (r < 0)
		return r;
	uname(&u);
	j = json_object_new_object();
	json_object_object_add(j, "kernel", json_object_new_string(u.release));
	json_object_object_add(j, "params", params_json());
	json_object_object_add(j, "new", writer_json(w));
	munmap(w, sizeof(*w));
	return write_json(j);
}

static int run(void)
{
	char parent[PATH_MAX / 2], old[PATH_MAX], new[PATH_MAX], lim[32];
	_cleanup_(wbg_bpf_freep) struct wbg_bpf *bpf = NULL;
	struct writer_result *ow, *nw;
	struct json_object *j = json_object_new_object(), *o;
	struct wbid_sum sum = { 0 };
	uint64_t dirty_exit = 0, dirty_rm = 0;
	struct utsname u;
	struct statfs sfs;
	const char *fs = "other";
	double t_rm;
	int r;

	snprintf(parent, sizeof(parent), "%s", arg.name);
	snprintf(old, sizeof(old), "%s/old", parent);
	snprintf(new, sizeof(new), "%s/new", parent);
	if (statfs(arg.dir, &sfs) < 0)
		return log_error_errno(errno, "Cannot stat --dir %s", arg.dir);
	fs = sfs.f_type == 0xEF53 ? "ext4" : sfs.f_type == 0x58465342 ? "xfs" : sfs.f_type == 0x9123683E ? "btrfs" : fs;

	ow = mmap(NULL, 2 * sizeof(*ow), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ow == MAP_FAILED)
		return log_oom();
	nw = ow + 1;

	if (arg.bpf) {
		r = wbg_bpf_open(WBG_BPF_WBID, NULL, &bpf);
		if (r < 0)
			return log_error_errno(r, "BPF counters unavailable (use --no-bpf to run without)");
	}

	{
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/%s", arg.cgroup_root, parent);
		if (mkdir(p, 0755) < 0)
			return log_error_errno(errno, "Cannot create cgroup %s", p);
	}
	r = cg_write(arg.cgroup_root, parent, "cgroup.subtree_control", "+memory");
	if (r < 0)
		return log_error_errno(r, "Cannot enable the memory controller under %s", parent);
	snprintf(lim, sizeof(lim), "%" PRIu64, arg.parent_max);
	r = cg_write(arg.cgroup_root, parent, "memory.max", lim);
	if (r < 0)
		return log_error_errno(r, "Cannot set memory.max of %s", parent);
	for (const char *c = old; c; c = c == old ? new : NULL) {
		char p[PATH_MAX + 64];

		snprintf(p, sizeof(p), "%s/%s", arg.cgroup_root, c);
		if (mkdir(p, 0755) < 0)
			return log_error_errno(errno, "Cannot create cgroup %s", p);
	}
	r = cg_id(arg.cgroup_root, old, &sum.old_id);
	if (r < 0)
		return log_error_errno(r, "Cannot stat cgroup %s", old);

	cleanup_files();
	r = run_writer(old, arg.old_secs, arg.old_secs * 4 + 30, ow);
	if (r < 0)
		return r;
	(void)cg_read_keyed_u64(arg.cgroup_root, old, "memory.stat", "file_dirty", &dirty_exit);
	for (uint64_t i = 0; i < arg.syncs; i++) {
		r = do_syncfs();
		if (r < 0)
			return r;
	}
	(void)cg_read_keyed_u64(arg.cgroup_root, old, "memory.stat", "file_dirty", &dirty_rm);
	t_rm = mono_now();
	if (arg.removed) {
		r = cg_rmdir(arg.cgroup_root, old, 5000);
		if (r < 0)
			return log_error_errno(r, "Cannot remove cgroup %s", old);
	}

	mono_sleep_until(t_rm + arg.pause, NULL);
	r = run_writer(new, arg.new_secs, arg.deadline, nw);
	if (r < 0)
		return r;

	/* Results. */
	uname(&u);
	json_object_object_add(j, "kernel", json_object_new_string(u.release));
	json_object_object_add(j, "fs", json_object_new_string(fs));
	json_object_object_add(j, "mode", json_object_new_string(arg.removed ? "removed" : "alive"));
	json_object_object_add(j, "syncs", json_object_new_uint64(arg.syncs));
	json_object_object_add(j, "params", params_json());

	o = json_object_new_object();
	json_object_object_add(o, "cgroup_id", json_object_new_uint64(sum.old_id));
	json_object_object_add(o, "bytes_written", json_object_new_uint64(ow->written));
	json_object_object_add(o, "file_dirty_at_exit", json_object_new_uint64(dirty_exit));
	json_object_object_add(o, "file_dirty_at_removal", json_object_new_uint64(dirty_rm));
	json_object_object_add(j, "old", o);

	json_object_object_add(j, "new", writer_json(nw));

	if (bpf) {
		sum.series = json_object_new_array();
		sum.old = json_object_new_object();
		sum.all = json_object_new_object();
		r = wbg_bpf_foreach_wbid(bpf, wbid_cb, &sum);
		if (r < 0)
			return r;
		o = json_object_new_object();
		json_object_object_add(o, "old_target", sum.old);
		json_object_object_add(o, "all", sum.all);
		json_object_object_add(o, "series", sum.series);
		json_object_object_add(j, "cgroup_writeback_by_id", o);
	}

	/* Leave nothing behind. */
	if (!arg.removed)
		(void)cg_rmdir(arg.cgroup_root, old, 5000);
	(void)cg_rmdir(arg.cgroup_root, new, 5000);
	(void)cg_rmdir(arg.cgroup_root, parent, 5000);
	cleanup_files();

	munmap(ow, 2 * sizeof(*ow));
	return write_json(j);
}

static void help(void)
{
	printf("Usage: wbstall --dir DIR [OPTIONS]\n\n"
	       "Reproduces the dying-writeback stall and measures the replacement writer's lag.\n\n"
	       "  --dir DIR            directory on the filesystem under test (required)\n"
	       "  --files N            files appended round-robin (default %" PRIu64 ")\n"
	       "  --rate MIB           target append rate, MiB/s (default %g)\n"
	       "  --parent-max SIZE    memory.max of the parent cgroup (default 256M)\n"
	       "  --old-secs S         how long the old cgroup appends (default %g)\n"
	       "  --new-secs S         how much data (in seconds of rate) the new one appends (default %g)\n"
	       "  --pause S            between removal and the new writer (default %g)\n"
	       "  --deadline S         stop the new writer after S seconds (default 4*new-secs+60)\n"
	       "  --mode removed|alive remove the old cgroup, or keep it (control)\n"
	       "  --syncs 0|1|2        syncfs passes before removal (default 0)\n"
	       "  --cgroup-root PATH   cgroup2 mount (default /sys/fs/cgroup)\n"
	       "  --name NAME          parent cgroup name (default wbstall)\n"
	       "  --json FILE          write the result there instead of stdout\n"
	       "  --no-bpf             do not count cgroup_writeback_by_id() results\n"
	       "  --here               only the new writer, in this process's cgroup (a container's\n"
	       "                       workload: run it again in the replacement); no cgroups made\n",
	       arg.files, arg.rate_mib, arg.old_secs, arg.new_secs, arg.pause);
}

static int parse_argv(int argc, char **argv)
{
	enum { A_FILES = 256, A_RATE, A_PMAX, A_OLD, A_NEW, A_PAUSE, A_DEADLINE, A_MODE, A_SYNCS, A_ROOT,
	       A_NAME, A_JSON, A_NOBPF, A_DIR, A_HERE };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },	   { "dir", required_argument, NULL, A_DIR },
		{ "files", required_argument, NULL, A_FILES }, { "rate", required_argument, NULL, A_RATE },
		{ "parent-max", required_argument, NULL, A_PMAX }, { "old-secs", required_argument, NULL, A_OLD },
		{ "new-secs", required_argument, NULL, A_NEW }, { "pause", required_argument, NULL, A_PAUSE },
		{ "deadline", required_argument, NULL, A_DEADLINE }, { "mode", required_argument, NULL, A_MODE },
		{ "syncs", required_argument, NULL, A_SYNCS }, { "cgroup-root", required_argument, NULL, A_ROOT },
		{ "name", required_argument, NULL, A_NAME },   { "json", required_argument, NULL, A_JSON },
		{ "no-bpf", no_argument, NULL, A_NOBPF },	   { "here", no_argument, NULL, A_HERE },
		{}
	};
	int c, idx, r = 0;

	while ((c = getopt_long(argc, argv, "h", opts, &idx)) >= 0) {
		switch (c) {
		case 'h':
			help();
			exit(0);
		case A_DIR: arg.dir = optarg; break;
		case A_FILES: r = parse_u64_max(optarg, 100000, &arg.files); break;
		case A_RATE: r = parse_double(optarg, &arg.rate_mib); break;
		case A_PMAX: r = parse_size(optarg, &arg.parent_max); break;
		case A_OLD: r = parse_double(optarg, &arg.old_secs); break;
		case A_NEW: r = parse_double(optarg, &arg.new_secs); break;
		case A_PAUSE: r = parse_double(optarg, &arg.pause); break;
		case A_DEADLINE: r = parse_double(optarg, &arg.deadline); break;
		case A_SYNCS: r = parse_u64_max(optarg, 2, &arg.syncs); break;
		case A_ROOT: arg.cgroup_root = optarg; break;
		case A_NAME: arg.name = optarg; break;
		case A_JSON: arg.json = optarg; break;
		case A_NOBPF: arg.bpf = false; break;
		case A_HERE: arg.here = true; break;
		case A_MODE:
			if (strcmp(optarg, "removed") == 0)
				arg.removed = true;
			else if (strcmp(optarg, "alive") == 0)
				arg.removed = false;
			else
				r = -EINVAL;
			break;
		default:
			return -EINVAL;
		}
		if (r < 0)
			return log_error_errno(r, "Invalid value '%s' for --%s", optarg, opts[idx].name);
	}
	if (!arg.dir)
		return log_error_errno(EINVAL, "--dir is required");
	if (arg.files == 0 || arg.rate_mib <= 0 || arg.new_secs <= 0)
		return log_error_errno(EINVAL, "--files, --rate and --new-secs must be positive");
	if (arg.deadline <= 0)
		arg.deadline = arg.new_secs * 4 + 60;
	if (arg.deadline >= MAX_SECS)
		return log_error_errno(ERANGE, "--deadline must be below %d s", MAX_SECS);
	return 0;
}

/* Each writer holds every file open: a thousand files pass the usual soft
 * limit of 1024 descriptors. */
static int raise_nofile(void)
{
	struct rlimit rl;
	rlim_t need = arg.files + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return log_error_errno(errno, "getrlimit(RLIMIT_NOFILE)");
	if (rl.rlim_cur >= need)
		return 0;
	rl.rlim_cur = need;
	if (rl.rlim_max < need)
		rl.rlim_max = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return log_error_errno(errno, "--files %" PRIu64 " needs %llu open files, above the limit", arg.files,
				       (unsigned long long)need);
	return 0;
}

int main(int argc, char **argv)
{
	int r = parse_argv(argc, argv);

	if (r < 0)
		return 2;
	if (raise_nofile() < 0)
		return 1;
	return (arg.here ? run_here() : run()) < 0 ? 1 : 0;
}
