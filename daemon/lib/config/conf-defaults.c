/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A configuration before any file is read (its defaults) and after (freed):
 * what the parser (conf.c) and the key table (conf-keys.c) both start
 * from, below both. */
#include <stdlib.h>

#include "conf.h"
#include "wbguard.h"
#include "log.h"
#include "macro.h"

void config_init(struct wbg_config *c)
{
	*c = (struct wbg_config){
		.cgroup_root = "/sys/fs/cgroup",
		.log_level = LOG_INFO,
		.state_dir = WBG_RUN_DIR,
		.records_max_bytes = 4 << 20,
		.max_depth = 32,
		/* about 1.3 KiB each with its inotify marks: 32,768 fit the
		 * DaemonSet's 128 MiB with room for the rest */
		.max_cgroups = 32768,
		.max_cgroups_per_tenant = 2048,
		.bpf_dirtied_cgroups = WBG_DIRTIED_CGROUPS_MAX,
		.bpf_inode_records = WBG_INODES_MAX,
		.departed_retention_usec = 120ULL * 1000 * 1000,
		.metrics_per_cgroup = true,
		.watch_config = true,
		.watch_retry_usec = 30ULL * 1000 * 1000,
		.proc_sys = "/proc/sys",
		.flush = true,
		.workers = 4,
		.timeout_usec = 30ULL * 1000000,
		/* KERNEL-NOTES: on ext4 one syncfs can leave inodes I_DIRTY_SYNC and
		 * the dying wb then counts as dirty; a second pass fixed it in 5 of
		 * 5 runs. XFS and btrfs needed one. */
		.passes = { { "ext4", 2 }, { "xfs", 1 }, { "btrfs", 1 } },
		.n_passes = 3,
		.default_passes = 1,
		.inode_flush = WBG_INODE_FLUSH_AUTO,
		.max_inodes = 8192, /* the seed's recipe writes 5,000 files */
		.max_inodes_per_tenant = WBG_INODES_MAX / 4,
		.flush_bdev = true,
		.scratch_cycle = true,
		.flush_mode = WBG_FLUSH_ON_EVIDENCE,
		.exit_bytes_per_sec = 256ULL << 20,
		.fs_interval_usec = 1000000,
		.watch_max = 4096,
		.watch_max_per_tenant = 1024,
		.watch_max_age_usec = 300ULL * 1000000,
		.reflush_usec = 250000,
		.evidence_per_sec = 50,
		.mitigation = WBG_MITIGATION_AUTO,
		.expiry_mech = WBG_EXPIRY_PER_POD,
		.expiry_min_cs = 100,
		.expiry_max_cs = WBG_EXPIRY_MAX_CS,
		.expiry_per_pod_min_cs = 100,
		.boost_cs = 500, /* the stall's known workaround: 5 s instead of 30 */
		.boost_window_usec = 60ULL * 1000000,
		.bpf = true,
		.metrics_listen = "127.0.0.1:9573",
		.metrics_allow_users = "root prometheus",
		.flush_exclude = WBG_FLUSH_EXCLUDE_DEFAULT,
	};
}

static const char *const default_runtime_dirs[] = { "/run/crun", "/run/runc", "/run/containerd/runc/k8s.io",
						     "/run/containerd/runc/default",
						     "/run/docker/runtime-runc/moby" };

void config_strv_clear(char **v, unsigned *n)
{
	for (unsigned i = 0; i < *n; i++)
		free(v[i]);
	*n = 0;
}

static void free_policies(struct wbg_config *c)
{
	for (unsigned i = 0; i < c->n_policies; i++)
		free(c->policies[i].match);
	c->n_policies = 0;
}

void config_done(struct wbg_config *c)
{
	config_strv_clear(c->roots, &c->n_roots);
	config_strv_clear(c->runtime_dirs, &c->n_runtime_dirs);
	free_policies(c);
}

const char *const *config_runtime_dirs(const struct wbg_config *c, unsigned *ret_n)
{
	if (!c->runtime_dirs_set) {
		*ret_n = ELEMENTSOF(default_runtime_dirs);
		return default_runtime_dirs;
	}
	*ret_n = c->n_runtime_dirs;
	return (const char *const *)c->runtime_dirs;
}

