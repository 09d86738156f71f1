/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardd: keeps a replaced container's successor from stalling on the
 * dying cgroup's writeback. Options, host checks and the event loop. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/statfs.h>

#include "wbg-config.h"
#include "wbg-base.h"
#include "manager.h"
#include "wbg-kernel.h"

static const char *arg_config = WBG_CONF_FILE;
static const char *arg_cgroup_root;
static bool arg_no_bpf;
static bool arg_check_config;
static bool arg_print_config;
static bool arg_restore_sysctl;

static void help(void)
{
	printf("Usage: wbguardd [OPTIONS]\n\n"
	       "Watches cgroup removals and writes back what a removed cgroup left dirty,\n"
	       "so that writers in other cgroups never stall on its dying writeback.\n\n"
	       "  -h --help               show this help\n"
	       "     --version            show the version\n"
	       "  -c --config=PATH        configuration file (default " WBG_CONF_FILE ";\n"
	       "                          drop-ins from conf.d/ beside it)\n"
	       "     --cgroup-root=PATH   cgroup2 mount to watch (overrides the configuration)\n"
	       "     --no-bpf             do not load BPF programs\n"
	       "     --check-config       check the configuration (and its conf.d/ drop-ins)\n"
	       "                          and exit: 0 valid, 1 refused (file:line named)\n"
	       "     --print-config       print the effective configuration (every key, defaults\n"
	       "                          included, as the file would write it) and exit\n"
	       "     --restore-sysctl     put vm.dirty_expire_centisecs back to the admin's value\n"
	       "                          if a killed wbguardd left it lowered, and exit (for a\n"
	       "                          package's removal; the daemon must not run)\n"
	       "     --log-level=LEVEL    emerg ... debug (overrides the configuration)\n");
}

static int parse_argv(int argc, char **argv, const char **ret_level)
{
	enum { ARG_VERSION = 256, ARG_ROOT, ARG_NO_BPF, ARG_LOG_LEVEL, ARG_CHECK_CONFIG, ARG_PRINT_CONFIG,
	       ARG_RESTORE_SYSCTL };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "config", required_argument, NULL, 'c' },
		{ "cgroup-root", required_argument, NULL, ARG_ROOT },
		{ "no-bpf", no_argument, NULL, ARG_NO_BPF },
		{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
		{ "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
		{ "print-config", no_argument, NULL, ARG_PRINT_CONFIG },
		{ "restore-sysctl", no_argument, NULL, ARG_RESTORE_SYSCTL },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "hc:", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			exit(0);
		case ARG_VERSION:
			printf("wbguardd %s\n", WBGUARD_VERSION);
			exit(0);
		case 'c':
			arg_config = optarg;
			break;
		case ARG_ROOT:
			arg_cgroup_root = optarg;
			break;
		case ARG_NO_BPF:
			arg_no_bpf = true;
			break;
		case ARG_LOG_LEVEL:
			*ret_level = optarg;
			break;
		case ARG_CHECK_CONFIG:
			arg_check_config = true;
			break;
		case ARG_PRINT_CONFIG:
			arg_print_config = true;
			break;
		case ARG_RESTORE_SYSCTL:
			arg_restore_sysctl = true;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		return log_error_errno(EINVAL, "wbguardd takes no arguments ('%s')", argv[optind]);
	return 0;
}

/* The host must have a cgroup2 tree with the memory controller: without it
 * there are no per-cgroup wbs and nothing to guard. */
static int check_host(const char *root)
{
	_cleanup_free_ char *controllers = NULL;
	char p[4096];
	struct statfs sfs;
	int r;

	if (statfs(root, &sfs) < 0)
		return log_error_errno(errno, "Cannot stat cgroup root %s", root);
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return log_error_errno(ENOTSUP, "%s is not a cgroup2 mount", root);
	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	r = read_small_file_at(AT_FDCWD, p, 4096, &controllers);
	if (r < 0)
		return log_error_errno(r, "Cannot read %s", p);
	if (!strstr(controllers, "memory"))
		return log_error_errno(ENOTSUP, "The memory controller is not available in %s (%s)", root,
				       strtok(controllers, "\n"));
	if (geteuid() != 0)
		log_warning("Not running as root: syncfs, file handles and cgroup writes may be refused");
	return 0;
}

int main(int argc, char **argv)
{
	const char *level = NULL;
	struct manager *m = NULL;
	int r;

	r = parse_argv(argc, argv, &level);
	if (r < 0)
		return 2;
	if (arg_restore_sysctl) {
		/* what the next start would do first, without starting: a
		 * state file a killed wbguardd left says the admin's value (the
		 * sysctl keeper restores it unless someone changed it since),
		 * and it goes */
		struct wbg_config c;
		struct wbg_sysctl k;
		struct wbg_agent self, holder = { 0 };
		_cleanup_close_ int lock = -EBADF;

		config_init(&c);
		(void)config_load(&c, arg_config); /* where the state is; defaults if unreadable */
		/* held while it restores: no daemon starts in between */
		agent_self("/proc", &self);
		r = node_lock_take(c.state_dir, &self, &lock, &holder);
		if (r == -EBUSY) {
			log_error("wbguardd runs (%s, pid %d): it restores the sysctl at its stop; not touching it",
				  holder.name[0] ? holder.name : "unknown", (int)holder.pid);
			config_done(&c);
			return 1;
		}
		r = sysctl_keeper_open(&k, c.proc_sys, c.state_dir);
		if (r >= 0)
			r = sysctl_keeper_restore(&k);
		config_done(&c);
		return r < 0 ? 1 : 0;
	}
	if (arg_check_config || arg_print_config) {
		/* for CI on a ConfigMap: what this wbguardd makes of it, as a
		 * start or reload would (unknown keys warned of, not fatal) */
		struct wbg_config c;

		config_init(&c);
		r = config_load(&c, arg_config);
		if (r >= 0 && c.metrics_web_config[0]) {
			struct wbg_web_config web;
			char err[256];

			r = web_config_load(&web, c.metrics_web_config, err, sizeof(err));
			if (r < 0)
				log_error("[metrics] web_config_file %s", err);
			web_config_done(&web);
		}
		if (r >= 0 && arg_print_config)
			conf_print(stdout, &c);
		else if (r >= 0)
			printf("%s: valid%s\n", arg_config,
			       c.unknown_keys ? " (unknown keys ignored; see the warnings)" : "");
		config_done(&c);
		return r < 0 ? 1 : 0;
	}
	r = manager_new(arg_config, arg_cgroup_root, arg_no_bpf, &m);
	if (r < 0)
		return 1;
	if (level) {
		int i;

		for (i = 0; i <= LOG_DEBUG && strcmp(level, log_level_to_string(i)) != 0; i++)
			;
		if (i > LOG_DEBUG) {
			log_error("--log-level: unknown level '%s'", level);
			manager_free(m);
			return 2;
		}
		manager_set_log_level(m, i);
	}
	r = check_host(m->cfg.cgroup_root);
	if (r >= 0)
		r = manager_start(m);
	if (r >= 0)
		r = manager_run(m);
	manager_free(m);
	/* 3: another wbguardd runs on this node (the unit does not restart
	 * on it: RestartPreventExitStatus) */
	return r == -EBUSY ? 3 : r < 0 ? 1 : 0;
}
