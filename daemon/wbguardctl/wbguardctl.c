/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardctl: the command line for wbguardd. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include <fcntl.h>
#include <inttypes.h>

#include "wbg-base.h"
#include "wbg-kernel.h"
#include "doctor.h"
#include "verify.h"
#include "wbg-runtime.h"
#include "wbguardctl-api.h"

static volatile int stop;

static void help(void)
{
	printf("Usage: wbguardctl [OPTIONS] COMMAND [ARGS]\n\n"
	       "Inspect and drive wbguardd, which writes back what a removed container left\n"
	       "dirty so that its successor's writes never stall on the dying cgroup.\n\n"
	       "Commands:\n"
	       "  status            The daemon (version, kernel verdicts, mitigation, counts)\n"
	       "                    and vm.dirty_expire_centisecs: its value now, the admin's\n"
	       "                    value that wbguardd restores, and who holds it lowered.\n"
	       "                    The sysctl part is read from the state file, so it answers\n"
	       "                    with the daemon stopped too.\n"
	       "  list              Tracked cgroups with their dirty and writeback bytes now,\n"
	       "                    and the pod and container the OCI hook registered.\n"
	       "  flush CGROUP      Write back what CGROUP (a path under the cgroupfs root,\n"
	       "                    e.g. /system.slice/foo.service) dirtied. With --wait,\n"
	       "                    return when done or after --timeout. Without CGROUP,\n"
	       "                    --pod/--container name it: a pod's cgroup, else its\n"
	       "                    containers'.\n"
	       "  handovers         Recent handovers (one per cgroup going away), oldest\n"
	       "                    first: when each ended, sizes in IEC units; --limit N\n"
	       "                    for the last N.\n"
	       "  metrics           The daemon's Prometheus metrics (text format).\n"
	       "  reload            Re-read the configuration and wait: fails when wbguardd\n"
	       "                    refuses the file (the running one stays).\n"
	       "  ping              Whether wbguardd's event loop answers on the control\n"
	       "                    socket within --timeout (default 5 s): the DaemonSet's\n"
	       "                    liveness probe, which no TCP client can crowd out.\n"
	       "  doctor            What this node has and lacks for wbguard (cgroup v2,\n"
	       "                    BTF, privileges, opening by handle, wbguardd and its\n"
	       "                    verdicts, the hook file, registrations, runtimes' state,\n"
	       "                    inotify limits), each gap with the next step. Reads only.\n"
	       "  verify            Probe whether this kernel's foreign flushes reach dying\n"
	       "                    cgroup writeback (the dying-wb fallback) and whether it\n"
	       "                    writes back foreign block-device page caches on their\n"
	       "                    own (the separate bdev flush): a few MiB in a private\n"
	       "                    scratch cgroup, directory and loop device, seconds.\n"
	       "                    Runs here, without the daemon; leaves nothing behind.\n\n"
	       "Options:\n"
	       "  -h --help              show this help\n"
	       "     --version           show the version\n"
	       "     --json              machine-readable output (all but metrics)\n"
	       "     --socket PATH       wbguardd's control socket (default " WBG_CONTROL_SOCKET ")\n"
	       "     --system            use the system bus (io.wbguard1) instead of the socket\n"
	       "     --wait              flush: wait for the flush to finish\n"
	       "     --timeout SEC       flush --wait: give up after SEC (default 30);\n"
	       "                         verify: give up on seeing a foreign flush (default 20);\n"
	       "                         ping: wait for an answer (default 5)\n"
	       "     --limit N           handovers: only the last N\n"
	       "     --pod NAME          list, flush: registered containers of that pod\n"
	       "     --namespace NS      list, flush: ... in that namespace\n"
	       "     --container NAME    list, flush: ... with that container name\n"
	       "     --dir DIR           verify: where the probe writes, on a disk-backed filesystem\n"
	       "                         (default: the first of /var/tmp, /var/lib, / that is)\n"
	       "     --config FILE       doctor: wbguardd's configuration (default: the file the\n"
	       "                         running wbguardd read, else " WBG_CONF_FILE "),\n"
	       "                         whose cgroup_root, state_dir, runtime_state_dirs and\n"
	       "                         host_root it checks (in the DaemonSet's pod: the node's)\n"
	       "     --cgroup-root PATH  verify, doctor: cgroup2 mount (default /sys/fs/cgroup;\n"
	       "                         doctor: the configuration's cgroup_root)\n"
	       "     --hooks-file PATH   doctor: the OCI hook's file (default " WBG_OCI_HOOKS_FILE "\n"
	       "                         below the configuration's host_root)\n"
	       "     --state-dir DIR     status, doctor: wbguardd's state (default " WBG_RUN_DIR ";\n"
	       "                         doctor: the configuration's state_dir)\n"
	       "     --proc-sys DIR      status: where the sysctls are (default /proc/sys)\n\n"
	       "Exit status:\n"
	       "  0  success; flush: flushed, clean, drained or watched; verify: the dying-wb\n"
	       "     fallback is active\n"
	       "  1  verify: the fallback is missing; flush: the flush failed or timed out in\n"
	       "     the daemon (the outcome says which); reload: the file was refused;\n"
	       "     status: the sysctl is unreadable; doctor: a check failed\n"
	       "  2  usage error\n"
	       "  3  wbguardd is not reachable or refused the request (root only); status:\n"
	       "     wbguardd is not running\n"
	       "  4  flush --wait: still flushing when --timeout came\n"
	       "  5  verify: cannot tell (unknown, or the probe could not run); with 0 and 1,\n"
	       "     node-problem-detector's OK / NonOK / Unknown for a custom plugin\n");
}

static void on_signal(int sig)
{
	stop = 1;
}

static struct json_object *evidence_json(const struct verify_result *r)
{
	struct json_object *o = json_object_new_object(), *d = json_object_new_object(),
			   *de = json_object_new_object(), *b = json_object_new_object(),
			   *be = json_object_new_object();

	json_object_object_add(d, "state", json_object_new_string(wbg_verdict_to_string(r->dying_wb)));
	json_object_object_add(de, "symbol", json_object_new_boolean(r->evidence.sym_lookup_dying));
	json_object_object_add(de, "ok_to_dying", json_object_new_uint64(r->evidence.ok_to_dying));
	json_object_object_add(de, "enoent_to_dying", json_object_new_uint64(r->evidence.enoent_to_dying));
	json_object_object_add(de, "dying_wb_found", json_object_new_uint64(r->evidence.lookup_dying_found));
	json_object_object_add(d, "evidence", de);
	json_object_object_add(b, "state", json_object_new_string(wbg_verdict_to_string(r->bdev_flush)));
	json_object_object_add(be, "symbol", json_object_new_boolean(r->evidence.sym_bdev_flush));
	json_object_object_add(be, "tracepoint_dev_field", json_object_new_boolean(r->evidence.tp_dev_field));
	json_object_object_add(be, "bdev_flushes_seen", json_object_new_uint64(r->evidence.bdev_flushes));
	json_object_object_add(be, "bdev_dirty_own_path", json_object_new_uint64(r->evidence.bdev_dirty_own_path));
	json_object_object_add(be, "bdev_dirty_owner_wb_path",
			       json_object_new_uint64(r->evidence.bdev_dirty_shared_path));
	json_object_object_add(be, "dormant", json_object_new_boolean(verdict_bdev_dormant(&r->evidence)));
	json_object_object_add(b, "evidence", be);
	json_object_object_add(o, "dying_wb_fallback", d);
	json_object_object_add(o, "bdev_foreign_flush", b);
	json_object_object_add(o, "seconds", json_object_new_double(r->seconds));
	return o;
}

static int verify(bool json, const char *dir, const char *root, double timeout)
{
	struct verify_opts o = { .cgroup_root = root, .dir = dir, .timeout_s = timeout, .stop = &stop };
	struct verify_result r;
	struct sigaction sa = { .sa_handler = on_signal };
	int k;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	k = verify_run(&o, &r);
	if (k < 0) {
		if (k == -EINTR)
			log_error("Interrupted; everything the probe made is removed");
		return verify_exit_status(k, WBG_VERDICT_UNKNOWN);
	}
	if (json) {
		struct json_object *j = evidence_json(&r);

		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
		json_object_put(j);
	} else {
		printf("dying-wb fallback:   %s (symbol %s; foreign flushes to the dying wb: %llu ok, %llu -ENOENT)\n",
		       wbg_verdict_to_string(r.dying_wb), r.evidence.sym_lookup_dying ? "present" : "absent",
		       (unsigned long long)r.evidence.ok_to_dying, (unsigned long long)r.evidence.enoent_to_dying);
		printf("bdev foreign flush:  %s%s (symbol %s; flush_foreign dev field %s; foreign bdev dirtying: "
		       "%llu on its own path, %llu on the owner-wb path)\n",
		       wbg_verdict_to_string(r.bdev_flush), verdict_bdev_dormant(&r.evidence) ? ", code present but dormant" : "",
		       r.evidence.sym_bdev_flush ? "present" : "absent", r.evidence.tp_dev_field ? "present" : "absent",
		       (unsigned long long)r.evidence.bdev_dirty_own_path,
		       (unsigned long long)r.evidence.bdev_dirty_shared_path);
		printf("probe took %.1f s%s\n", r.seconds, r.saw_flush ? "" : "; the kernel made no foreign flush");
	}
	return verify_exit_status(0, r.dying_wb);
}

static void print_daemon(struct json_object *d)
{
	struct json_object *v;
	const char *keys[] = { "version", "dying_wb_fallback", "bdev_foreign_flush", "mitigating", "bpf", "system_bus",
			       "stall_evidence", "tracked_cgroups", "registered_containers", "active_handovers", "handovers_total",
			       "flushed_device_bytes", "nri", "nri_runtime" };

	printf("wbguardd:\n");
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (json_object_object_get_ex(d, keys[i], &v))
			printf("  %-22s %s\n", keys[i], json_object_get_string(v));
}

/* From wbguardd's state file and the sysctl itself, so it answers with the
 * daemon stopped or crashed too (then the file says what a restart will
 * restore). */
static int status(const struct ctl_opts *co, const char *state_dir, const char *proc_sys)
{
	bool json = co->json;
	struct json_object *daemon = ctl_daemon_status(co);
	bool reachable = daemon != NULL;
	struct wbg_sysctl k;
	_cleanup_free_ char *text = NULL;
	struct json_object *st = NULL, *o, *holders = NULL, *v;
	unsigned cur;
	int r;

	sysctl_keeper_init(&k, proc_sys, state_dir);
	r = sysctl_keeper_read(&k, &cur);
	if (r < 0) {
		log_error_errno(r, "Cannot read %s", k.path);
		json_object_put(daemon);
		return 1;
	}
	if (read_small_file_at(AT_FDCWD, k.state_path, 1 << 20, &text) >= 0)
		st = json_tokener_parse(text);
	o = json_object_new_object();
	json_object_object_add(o, "sysctl", json_object_new_string(WBG_SYSCTL_NAME));
	json_object_object_add(o, "current", json_object_new_int64(cur));
	json_object_object_add(o, "lowered", json_object_new_boolean(st != NULL));
	if (st && json_object_object_get_ex(st, "original", &v))
		json_object_object_add(o, "original", json_object_get(v));
	else
		json_object_object_add(o, "original", json_object_new_int64(cur));
	if (st && json_object_object_get_ex(st, "holders", &holders))
		json_object_object_add(o, "holders", json_object_get(holders));
	else
		json_object_object_add(o, "holders", json_object_new_array());
	if (json) {
		struct json_object *all = json_object_new_object();

		json_object_object_add(all, "daemon", daemon ? daemon : json_object_new_null());
		json_object_object_add(all, "dirty_expire", json_object_get(o));
		printf("%s\n", json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(all);
		daemon = NULL;
	} else if (daemon)
		print_daemon(daemon);
	else
		printf("wbguardd: not reachable\n");
	if (json)
		;
	else if (!st)
		printf("%s = %u (not changed by wbguardd)\n", WBG_SYSCTL_NAME, cur);
	else {
		json_object_object_get_ex(o, "original", &v);
		printf("%s = %u, lowered by wbguardd; the admin's value %" PRId64 " is restored when nobody holds it\n",
		       WBG_SYSCTL_NAME, cur, json_object_get_int64(v));
		for (size_t i = 0; holders && i < json_object_array_length(holders); i++) {
			struct json_object *h = json_object_array_get_idx(holders, i), *id, *val;

			if (json_object_object_get_ex(h, "id", &id) && json_object_object_get_ex(h, "value", &val))
				printf("  held at %-6" PRId64 " by %s\n", json_object_get_int64(val), json_object_get_string(id));
		}
	}
	json_object_put(o);
	json_object_put(st);
	json_object_put(daemon);
	/* as systemctl status: 3 when it is not running (the sysctl is still
	 * shown, from its state file) */
	return reachable ? 0 : EXIT_UNREACHABLE;
}

int main(int argc, char **argv)
{
	enum { ARG_JSON = 256, ARG_DIR, ARG_ROOT, ARG_TIMEOUT, ARG_VERSION, ARG_STATE_DIR, ARG_PROC_SYS, ARG_SOCKET,
	       ARG_SYSTEM, ARG_WAIT, ARG_LIMIT, ARG_HOOKS_FILE, ARG_POD, ARG_NAMESPACE, ARG_CONTAINER, ARG_CONFIG };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },	      { "version", no_argument, NULL, ARG_VERSION },
		{ "json", no_argument, NULL, ARG_JSON },	      { "dir", required_argument, NULL, ARG_DIR },
		{ "cgroup-root", required_argument, NULL, ARG_ROOT }, { "timeout", required_argument, NULL, ARG_TIMEOUT },
		{ "state-dir", required_argument, NULL, ARG_STATE_DIR }, { "proc-sys", required_argument, NULL, ARG_PROC_SYS },
		{ "socket", required_argument, NULL, ARG_SOCKET },   { "system", no_argument, NULL, ARG_SYSTEM },
		{ "wait", no_argument, NULL, ARG_WAIT },	      { "limit", required_argument, NULL, ARG_LIMIT },
		{ "hooks-file", required_argument, NULL, ARG_HOOKS_FILE }, { "config", required_argument, NULL, ARG_CONFIG },
		{ "pod", required_argument, NULL, ARG_POD },	      { "namespace", required_argument, NULL, ARG_NAMESPACE },
		{ "container", required_argument, NULL, ARG_CONTAINER },
		{},
	};
	/* NULL: doctor takes them from wbguardd's configuration */
	const char *dir = NULL, *root = NULL, *state_dir = NULL, *proc_sys = "/proc/sys", *hooks_file = NULL,
		   *config = NULL;
	struct ctl_opts co = { .socket = WBG_CONTROL_SOCKET };
	double timeout = 0;
	bool wait = false;
	uint64_t limit = 0;
	const char *cmd;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("wbguardctl %s\n", WBGUARD_VERSION);
			return 0;
		case ARG_JSON:
			co.json = true;
			break;
		case ARG_DIR:
			dir = optarg;
			break;
		case ARG_ROOT:
			root = optarg;
			break;
		case ARG_STATE_DIR:
			state_dir = optarg;
			break;
		case ARG_PROC_SYS:
			proc_sys = optarg;
			break;
		case ARG_SOCKET:
			co.socket = optarg;
			break;
		case ARG_SYSTEM:
			co.socket = NULL;
			break;
		case ARG_HOOKS_FILE:
			hooks_file = optarg;
			break;
		case ARG_CONFIG:
			config = optarg;
			break;
		case ARG_POD:
			co.pod = optarg;
			break;
		case ARG_NAMESPACE:
			co.namespace = optarg;
			break;
		case ARG_CONTAINER:
			co.container = optarg;
			break;
		case ARG_WAIT:
			wait = true;
			break;
		case ARG_LIMIT:
			if (parse_u64_max(optarg, UINT32_MAX, &limit) < 0) {
				log_error("--limit: '%s' is not a count", optarg);
				return 2;
			}
			break;
		case ARG_TIMEOUT:
			if (parse_double(optarg, &timeout) < 0 || timeout <= 0) {
				log_error("--timeout: '%s' is not a number of seconds", optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		help();
		return 2;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "flush") == 0 ? optind + 2 != argc && !(optind + 1 == argc && (co.pod || co.container))
				       : optind + 1 != argc) {
		log_error("%s: wrong number of arguments; see --help", cmd);
		return 2;
	}
	co.timeout = timeout > 0 ? timeout : 30;
	if (strcmp(cmd, "verify") == 0)
		return verify(co.json, dir, root ?: "/sys/fs/cgroup", timeout > 0 ? timeout : 20);
	if (strcmp(cmd, "status") == 0)
		return status(&co, state_dir ?: WBG_RUN_DIR, proc_sys);
	if (strcmp(cmd, "list") == 0)
		return ctl_list(&co);
	if (strcmp(cmd, "flush") == 0)
		return ctl_flush(&co, optind + 1 < argc ? argv[optind + 1] : NULL, wait);
	if (strcmp(cmd, "handovers") == 0)
		return ctl_handovers(&co, (unsigned)limit);
	if (strcmp(cmd, "metrics") == 0)
		return ctl_metrics(&co);
	if (strcmp(cmd, "reload") == 0)
		return ctl_reload(&co);
	if (strcmp(cmd, "ping") == 0)
		return ctl_ping(&co, timeout >= 1 ? (unsigned)timeout : 5);
	if (strcmp(cmd, "doctor") == 0)
		return doctor(&co, &(struct doctor_paths){ .config = config, .cgroup_root = root, .state_dir = state_dir,
							   .hooks_file = hooks_file, .proc = "/proc" });
	log_error("Unknown command '%s'; see --help", cmd);
	return 2;
}
