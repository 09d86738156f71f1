/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardd's configuration: /etc/wbguard/wbguard.conf plus conf.d drop-ins. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "expiry-policy.h"
#include "wbg-flush.h"

/* WBG_CONF_FILE and WBG_RUN_DIR come from the build (config.h). */
#define WBG_ROOTS_MAX 16
#define WBG_FSTYPES_MAX 8
#define WBG_POLICIES_MAX 64
#define WBG_RUNTIME_DIRS_MAX 8
#define WBG_FLUSH_EXCLUDE_DEFAULT "nfs nfs4 cifs smb3 ceph glusterfs lustre afs fuse fuse.* fuseblk"

enum wbg_mitigation { WBG_MITIGATION_AUTO, WBG_MITIGATION_ON, WBG_MITIGATION_OFF };
enum wbg_inode_flush { WBG_INODE_FLUSH_AUTO, WBG_INODE_FLUSH_ON, WBG_INODE_FLUSH_OFF };
/* eager: every removal with dirty data flushes it before rmdir.
 * on-evidence: a removal is only watched (lifecycle.h); its data is flushed
 * when a live cgroup dirties one of its inodes, or never.
 * exit: as a cgroup empties, its own inodes are written (and waited for),
 * within a byte budget per device; its removal is then watched as
 * on-evidence watches, for what that flush missed. */
enum wbg_flush_mode { WBG_FLUSH_ON_EVIDENCE, WBG_FLUSH_EAGER, WBG_FLUSH_EXIT };

struct wbg_config {
	/* [daemon] */
	char cgroup_root[256];
	char *roots[WBG_ROOTS_MAX]; /* subtrees to watch, relative to cgroup_root; "" = all */
	unsigned n_roots;
	int log_level;
	char state_dir[256];
	unsigned max_depth; /* cgroup levels tracked below cgroup_root */
	unsigned max_cgroups, max_cgroups_per_tenant; /* tracked at once; 0: no cap */
	uint64_t records_max_bytes; /* handovers.jsonl rotates past it */
	uint64_t watch_retry_usec;  /* a rescan this often while the inotify limit refuses watches */
	char proc_sys[256]; /* where vm.dirty_expire_centisecs lives: <proc_sys>/vm/... */
	/* The host's root seen from here ("" = this is the host): in a
	 * container with the host's PID namespace, /proc/1/root. The mount
	 * table is then PID 1's, and mount points, device nodes, debugfs and
	 * tracefs are opened below it. */
	char host_root[256];
	char scratch_cgroup[256]; /* "" = pick at start (own delegated subtree or root) */
	/* [flush] */
	bool flush;      /* flush for removed cgroups at all (no: the boost alone) */
	unsigned workers;
	uint64_t timeout_usec;
	struct wbg_fs_passes passes[WBG_FSTYPES_MAX];
	unsigned n_passes;
	unsigned default_passes;
	enum wbg_inode_flush inode_flush;
	unsigned max_inodes; /* per cgroup, for the inode-level flush */
	unsigned max_inodes_per_tenant; /* the share of one tenant; 0: none */
	bool flush_bdev;
	char flush_exclude[512]; /* fstype globs never flushed (network, FUSE), separated by spaces */
	bool scratch_cycle;
	enum wbg_flush_mode flush_mode;
	uint64_t fs_interval_usec;  /* the budget: at least this between two flushes of one filesystem */
	unsigned watch_max;         /* on-evidence: dying cgroups watched at once */
	unsigned watch_max_per_tenant; /* ... of one tenant (a pod, a user, a service's subtree) */
	uint64_t watch_max_age_usec; /* on-evidence: flushed if not drained by then */
	uint64_t reflush_usec;      /* on-evidence: between two flushes of one dying cgroup */
	unsigned evidence_per_sec;  /* on-evidence: flushes on evidence node-wide, a second (0: no cap) */
	uint64_t exit_bytes_per_sec; /* exit: the recipe's writes per device, a second (0: no cap) */
	/* [mitigation] */
	enum wbg_mitigation mitigation;
	/* [expiry] */
	unsigned expiry_default_cs; /* 0: pods without a policy keep the kernel's */
	enum wbg_expiry_mech expiry_mech;
	unsigned expiry_min_cs, expiry_max_cs; /* bounds of an annotation's value */
	unsigned expiry_per_pod_min_cs;        /* the per-pod mechanism's floor, whatever the source */
	unsigned boost_cs;          /* 0: no handover boost */
	uint64_t boost_window_usec;
	char *runtime_dirs[WBG_RUNTIME_DIRS_MAX]; /* OCI runtimes' state roots */
	unsigned n_runtime_dirs;
	/* [policy "GLOB"] sections, in file order: the first match wins */
	struct wbg_policy_rule policies[WBG_POLICIES_MAX];
	unsigned n_policies;
	unsigned unknown_keys; /* keys ignored in the last load (logged) */
	/* [bpf] */
	bool bpf;
	bool metrics_per_cgroup; /* [metrics] per_cgroup: per-cgroup series exported at all */
	bool watch_config;       /* [daemon] watch_config: reload when the configuration's files change */
	unsigned bpf_dirtied_cgroups; /* bound of the per-cgroup dirtied-device sets */
	unsigned bpf_inode_records;   /* bound of the (cgroup, inode) records */
	/* [metrics] */
	char metrics_listen[64]; /* "host:port", "[v6]:port", "" = off */
	char metrics_probe_listen[64]; /* the probes' own listener, the same way */
	char metrics_allow_users[256]; /* who may GET /metrics; "" = everyone */
	char metrics_textfile[256]; /* node_exporter textfile, "" = none */
	char metrics_nfd_features[256]; /* node-feature-discovery's feature file, "" = none */
	char metrics_web_config[256]; /* exporter-toolkit web config (TLS, basic auth), "" = plain HTTP */
	uint64_t departed_retention_usec; /* a released cgroup's series stay this long */
	/* [nri] */
	bool nri;                 /* connect to the runtime's NRI socket */
	char nri_socket[256];
	char nri_plugin_name[64];
	unsigned nri_plugin_index; /* 0-99, registered as two digits */
};

/* Every key at its default: the key table's (conf-keys.c). */
void config_init(struct wbg_config *c);
/* The runtime state dirs. */
const char *const *config_runtime_dirs(const struct wbg_config *c, unsigned *ret_n);
void config_done(struct wbg_config *c);
/* Frees a string array's n entries and sets n to 0. */
void config_strv_clear(char **v, unsigned *n);
/* Loads path, then path's directory's conf.d/ *.conf in lexical order. A
 * missing main file is fine (defaults); any bad line is an error naming file,
 * line and key, and *c is then left as it was. */
int config_load(struct wbg_config *c, const char *path);
/* One file or string on top of what c holds (used by config_load and tests). */
int config_parse_file(struct wbg_config *c, const char *path);
int config_parse_string(struct wbg_config *c, const char *name, const char *text);
/* The planner's part of [flush] (plan.h): pointers into c. */
struct wbg_plan_params config_plan_params(const struct wbg_config *c);
/* What expiry policies are resolved from (expiry-policy.h): pointers into c. */
struct wbg_expiry_rules config_expiry_rules(const struct wbg_config *c);
struct wbg_conf_key;
/* After a reload: the keys that apply only at restart get running's values
 * back in c; changed (may be NULL) hears of each that the new file changed.
 * -ENOMEM only. */
int config_keep_restart_keys(struct wbg_config *c, const struct wbg_config *running,
			     void (*changed)(const struct wbg_conf_key *k, const char *running, const char *wanted));
