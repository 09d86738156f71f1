/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardctl doctor: what this node has and lacks for wbguard, each gap
 * with the next step. Reads only; changes nothing. */
#include <errno.h>
#include <stdarg.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <json-c/json.h>

#include "wbg-config.h"
#include "doctor.h"
#include "wbg-flush.h"
#include "wbg-base.h"
#include "wbguardctl-api.h"

enum level { OK, WARN, FAIL };

struct report {
	bool json;
	struct json_object *checks;
	unsigned n[3];
};

static void say(struct report *r, enum level l, const char *what, const char *next, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void say(struct report *r, enum level l, const char *what, const char *next, const char *fmt, ...)
{
	static const char *const names[] = { "ok", "warn", "fail" };
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start is just above */
	va_end(ap);
	r->n[l]++;
	if (r->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "check", json_object_new_string(what));
		json_object_object_add(o, "result", json_object_new_string(names[l]));
		json_object_object_add(o, "detail", json_object_new_string(detail));
		if (l != OK && next)
			json_object_object_add(o, "next", json_object_new_string(next));
		json_object_array_add(r->checks, o);
		return;
	}
	printf("%-4s %-22s %s\n", names[l], what, detail);
	if (l != OK && next)
		printf("     %-22s -> %s\n", "", next);
}

/* CapEff of this process, from /proc/self/status. */
static uint64_t effective_caps(void)
{
	_cleanup_free_ char *text = NULL;
	const char *p;
	uint64_t caps = 0;

	if (read_small_file_at(AT_FDCWD, "/proc/self/status", 64 * 1024, &text) < 0)
		return 0;
	p = strstr(text, "\nCapEff:");
	if (p)
		caps = strtoull(p + 8, NULL, 16);
	return caps;
}

static void check_cgroup(struct report *r, const char *root)
{
	_cleanup_free_ char *controllers = NULL;
	struct statfs sfs;
	char p[4096];

	if (statfs(root, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		say(r, FAIL, "cgroup v2", "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2 only)",
		    "%s is not a cgroup2 mount", root);
		return;
	}
	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	if (read_small_file_at(AT_FDCWD, p, 4096, &controllers) < 0 || !strstr(controllers, "memory")) {
		say(r, FAIL, "memory controller", "enable the memory controller (cgroup_enable=memory)",
		    "not in %s", p);
		return;
	}
	say(r, OK, "cgroup v2, memory", NULL, "%s", root);
}

static void check_kernel(struct report *r)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		say(r, OK, "BTF", NULL, "/sys/kernel/btf/vmlinux (the BPF programs load with CO-RE)");
	else
		say(r, WARN, "BTF", "a kernel built with CONFIG_DEBUG_INFO_BTF=y",
		    "no /sys/kernel/btf/vmlinux: no BPF programs; every removal is flushed eagerly, every "
		    "filesystem");
}

static void check_privileges(struct report *r, const char *root)
{
	uint64_t caps = effective_caps();
	int h;

	if (!(caps & (1ULL << CAP_BPF)) && !(caps & (1ULL << CAP_SYS_ADMIN)))
		say(r, WARN, "CAP_BPF", "run wbguardd as root, or with CAP_BPF and CAP_PERFMON",
		    "not held here (wbguardd needs it for its BPF programs)");
	else
		say(r, OK, "CAP_BPF", NULL, "held here");
	h = flush_probe_handles(root);
	if (h == 0)
		say(r, OK, "open by handle", NULL, "allowed: flushes write a cgroup's own inodes only");
	else
		say(r, WARN, "open by handle",
		    "CAP_DAC_READ_SEARCH and a seccomp profile allowing open_by_handle_at (docs/operations.md, "
		    "\"Per-inode flushing in the DaemonSet\")",
		    "refused here (%s): a cgroup's own-inode flushes become a budgeted syncfs",
		    h == -EPERM ? "no CAP_DAC_READ_SEARCH, or seccomp" : strerror(-h));
}

static void check_inotify(struct report *r, uint64_t tracked)
{
	_cleanup_free_ char *text = NULL;
	uint64_t max = 0;

	if (read_small_file_at(AT_FDCWD, "/proc/sys/fs/inotify/max_user_watches", 64, &text) < 0 ||
	    sscanf(text, "%" SCNu64, &max) != 1) {
		say(r, WARN, "inotify watches", NULL, "cannot read /proc/sys/fs/inotify/max_user_watches");
		return;
	}
	/* two per tracked cgroup (its directory and cgroup.events) */
	if (max < 2 * tracked + 1024)
		say(r, WARN, "inotify watches", "sysctl fs.inotify.max_user_watches higher",
		    "%" PRIu64 " allowed, %" PRIu64 " cgroups tracked need about %" PRIu64, max, tracked,
		    2 * tracked);
	else
		say(r, OK, "inotify watches", NULL, "%" PRIu64 " allowed (2 per tracked cgroup)", max);
}

/* Below host_root ("" on the host): a configured directory wbguardd
 * reads as written, so one outside it is the pod's own, not the node's. */
static bool below(const char *path, const char *host_root)
{
	size_t n = strlen(host_root);

	return !n || (strncmp(path, host_root, n) == 0 && (path[n] == '/' || !path[n]));
}

static void check_runtimes(struct report *r, const struct wbg_config *c, const char *hooks_file)
{
	const char *const *dirs, *first = NULL;
	unsigned n, present = 0, outside = 0;
	char next[512];

	dirs = config_runtime_dirs(c, &n);
	for (unsigned i = 0; i < n; i++) {
		if (access(dirs[i], F_OK) == 0 && present++ == 0)
			first = dirs[i];
		outside += !below(dirs[i], c->host_root);
	}
	if (present)
		say(r, OK, "runtime state", NULL, "%u of %u runtime state directories here (%s)", present, n, first);
	else {
		snprintf(next, sizeof(next), "[expiry] runtime_state_dirs, where this node's runtime keeps them%s%s",
			 outside ? ", below host_root " : "", outside ? c->host_root : "");
		say(r, WARN, "runtime state", next, "none of the %u configured runtime state directories exists%s", n,
		    outside ? " (some are not below host_root: the pod's, not the node's)" : "");
	}
	if (access(hooks_file, R_OK) == 0)
		say(r, OK, "OCI hook file", NULL, "%s (CRI-O and Podman read it)", hooks_file);
	else
		say(r, WARN, "OCI hook file", "install the package on the node (the DaemonSet does not put it there)",
		    "no %s: containers are not registered (no pod names, no per-pod expiry from annotations)",
		    hooks_file);
}

/* The wbguardd processes in proc other than pid (hostPID in the DaemonSet:
 * the node's); their count, the first's pid in *ret_other. */
static unsigned other_daemons(const char *proc, pid_t pid, pid_t *ret_other)
{
	_cleanup_closedir_ DIR *d = opendir(proc);
	unsigned n = 0;

	for (struct dirent *e; d && (e = readdir(d));) {
		_cleanup_free_ char *comm = NULL;
		char p[512];
		int q = atoi(e->d_name);

		if (q <= 0 || q == pid)
			continue;
		snprintf(p, sizeof(p), "%s/%d/comm", proc, q);
		if (read_small_file_at(AT_FDCWD, p, 64, &comm) >= 0 && strcmp(comm, "wbguardd\n") == 0 && n++ == 0)
			*ret_other = q;
	}
	return n;
}

/* One wbguardd per node: the lock's holder, a daemon refused since it
 * started, and any other wbguardd process (one without the lock, or with
 * another state directory, would still share the sysctl). */
static void check_agents(struct report *r, const char *state_dir, const char *proc)
{
	struct wbg_agent holder = { 0 }, refused = { 0 };
	pid_t other = 0;
	unsigned n;
	int held = node_lock_holder(state_dir, &holder);

	n = other_daemons(proc, held > 0 ? holder.pid : 0, &other);
	if (held > 0 && node_lock_refused(state_dir, &refused) == 0 &&
	    refused.since_realtime_usec >= holder.since_realtime_usec)
		say(r, WARN, "one agent", "run one: disable the unit (systemctl disable --now wbguard) or delete the DaemonSet",
		    "a second wbguardd (%s, pid %d) was refused while %s (pid %d) runs", refused.name, (int)refused.pid,
		    holder.name, (int)holder.pid);
	else if (n > (held > 0 ? 0 : 1))
		say(r, WARN, "one agent", "run one: the unit or the DaemonSet",
		    "%u wbguardd processes besides the lock's holder (pid %d first)", n - (held > 0 ? 0 : 1), (int)other);
	else if (held > 0)
		say(r, OK, "one agent", NULL, "%s, pid %d, holds %s/" WBG_NODE_LOCK_FILE, holder.name, (int)holder.pid,
		    state_dir);
	else
		say(r, OK, "one agent", NULL, "no wbguardd holds %s/" WBG_NODE_LOCK_FILE "%s", state_dir,
		    n ? " (one runs without it: an older version?)" : "");
}

static const char *get_s(struct json_object *d, const char *k)
{
	struct json_object *v;

	return d && json_object_object_get_ex(d, k, &v) ? json_object_get_string(v) : NULL;
}

static uint64_t get_u(struct json_object *d, const char *k)
{
	struct json_object *v;

	return d && json_object_object_get_ex(d, k, &v) ? json_object_get_uint64(v) : 0;
}

/* wbguardd's configuration as it reads it; defaults if it is missing or
 * refused (said). */
static void check_config(struct report *r, struct wbg_config *c, const char *path)
{
	config_init(c);
	if (config_load(c, path) < 0)
		say(r, WARN, "configuration", "wbguardd --check-config --config FILE names the line",
		    "%s refused: the rows below use the defaults", path);
	else if (access(path, F_OK) < 0)
		say(r, OK, "configuration", NULL, "no %s: the defaults", path);
	else
		say(r, OK, "configuration", NULL, "%s%s%s", path, c->host_root[0] ? ", the node below " : "",
		    c->host_root);
}

/* NRI: connected, or why not, against whether the runtime offers it (its
 * socket on the node). */
static void check_nri(struct report *r, const struct wbg_config *c, struct json_object *d)
{
	const char *phase = get_s(d, "nri") ?: "off", *runtime = get_s(d, "nri_runtime") ?: "";
	_cleanup_free_ char *sock = NULL;
	struct stat st;
	bool offered;

	if (asprintf(&sock, "%s%s", c->host_root, c->nri_socket) < 0)
		return;
	offered = stat(sock, &st) == 0 && S_ISSOCK(st.st_mode);
	if (strcmp(phase, "ready") == 0)
		say(r, OK, "NRI", NULL, "registered with %s: every pod and container named, no hook needed for names",
		    runtime);
	else if (!offered)
		say(r, OK, "NRI", NULL, "%s: no NRI socket at %s (this runtime's containers are named by the OCI hook)",
		    phase, c->nri_socket);
	else if (strcmp(phase, "off") == 0)
		say(r, WARN, "NRI", "[nri] enable = yes (and a wbguardd built with NRI)",
		    "the runtime offers NRI at %s, and wbguardd does not use it", c->nri_socket);
	else
		say(r, WARN, "NRI", "journalctl -u wbguard | grep NRI (the runtime's NRI may refuse external plugins)",
		    "%s: the runtime's NRI socket is there, and wbguardd is not registered", phase);
}

int doctor(const struct ctl_opts *co, const struct doctor_paths *p)
{
	struct report r = { .json = co->json };
	struct json_object *d;
	struct wbg_config c;
	_cleanup_free_ char *hooks = NULL;
	const char *v, *root;

	if (r.json)
		r.checks = json_object_new_array();
	d = ctl_daemon_status(co);
	/* the file wbguardd runs with (in the pod, the ConfigMap's, where
	 * the image's wbguardctl has another default) */
	check_config(&r, &c, p->config ?: get_s(d, "config") ?: WBG_CONF_FILE);
	root = p->cgroup_root ?: c.cgroup_root;
	if (!p->hooks_file && asprintf(&hooks, "%s%s", c.host_root, WBG_OCI_HOOKS_FILE) < 0)
		hooks = NULL;
	check_cgroup(&r, root);
	check_kernel(&r);
	check_privileges(&r, root);
	if (!d)
		say(&r, FAIL, "wbguardd", "systemctl start wbguard.service (or the DaemonSet's pod)",
		    "not reachable at %s", co->socket ? co->socket : "the system bus");
	else {
		say(&r, OK, "wbguardd", NULL, "%s, %s BPF, mitigating %s", get_s(d, "version"),
		    strcmp(get_s(d, "bpf") ?: "", "true") == 0 ? "with" : "without", get_s(d, "mitigating"));
		v = get_s(d, "dying_wb_fallback");
		if (v && strcmp(v, "active") == 0)
			say(&r, OK, "kernel", NULL, "has the dying-wb fallback: wbguardd stands down");
		else
			say(&r, WARN, "kernel", "wbguardctl verify (a probe, seconds) to know; keep wbguardd running",
			    "dying-wb fallback %s: this node needs wbguardd", v ? v : "unknown");
		v = get_s(d, "stall_evidence");
		if (v && strcmp(v, "yes") == 0)
			say(&r, OK, "stall evidence", NULL, "removals it never saw are covered by the stall itself");
		else if (v && strncmp(v, "off", 3) == 0)
			say(&r, WARN, "stall evidence", "[mitigation] mode and [flush] enable in the configuration", "%s", v);
		else
			say(&r, WARN, "stall evidence", "a kernel with fentry/fexit (BTF, 5.5+)", "%s",
			    v ? v : "unknown");
		check_nri(&r, &c, d);
		if (get_u(d, "registered_containers"))
			say(&r, OK, "registrations", NULL, "%" PRIu64 " containers registered (by the hook or NRI)",
			    get_u(d, "registered_containers"));
		else
			say(&r, WARN, "registrations", "check the hook file and the runtime's hooks directory",
			    "no container registered yet (none started since, or the hook does not run)");
		check_inotify(&r, get_u(d, "tracked_cgroups"));
	}
	check_agents(&r, p->state_dir ?: c.state_dir, p->proc);
	check_runtimes(&r, &c, p->hooks_file ?: hooks ?: WBG_OCI_HOOKS_FILE);
	config_done(&c);
	if (r.json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "checks", r.checks);
		json_object_object_add(o, "failed", json_object_new_int(r.n[FAIL]));
		json_object_object_add(o, "warnings", json_object_new_int(r.n[WARN]));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else
		printf("%u ok, %u warnings, %u failed\n", r.n[OK], r.n[WARN], r.n[FAIL]);
	json_object_put(d);
	return r.n[FAIL] ? 1 : 0;
}
