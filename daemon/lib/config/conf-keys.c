/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-keys.h"
#include "conf.h"
#include "wbguard.h"
#include "expiry-policy.h"
#include "wbg-base.h"

static const char *const log_levels[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", NULL };
static const char *const auto_on_off[] = { "auto", "on", "off", NULL };
static const char *const flush_modes[] = { "on-evidence", "eager", "exit", NULL }; /* enum wbg_flush_mode's order */
static const char *const expiry_mechs[] = { "per-pod", "global", NULL };  /* enum wbg_expiry_mech's order */

#define F(field) offsetof(struct wbg_config, field)
#define S(field) sizeof(((struct wbg_config *)0)->field)

static const struct wbg_conf_key keys[] = {
	{ .section = "daemon", .key = "cgroup_root", .def = "/sys/fs/cgroup", .type = WBG_CONF_PATH, .offset = F(cgroup_root), .size = S(cgroup_root), .flags = WBG_CONF_RESTART,
	  .doc = "The cgroup2 mount to watch." },
	{ .section = "daemon", .key = "roots", .type = WBG_CONF_CGROUP_PATHS, .offset = F(roots), .flags = WBG_CONF_RESTART,
	  .doc = "Subtrees (relative to cgroup_root) whose cgroups get handovers; empty: the whole tree." },
	{ .section = "daemon", .key = "log_level", .def = "info", .type = WBG_CONF_WORD, .offset = F(log_level), .words = log_levels,
	  .doc = "The least severe message logged." },
	{ .section = "daemon", .key = "state_dir", .def = WBG_RUN_DIR, .type = WBG_CONF_PATH, .offset = F(state_dir), .size = S(state_dir), .flags = WBG_CONF_RESTART,
	  .doc = "Runtime state: handovers.jsonl, sysctl.json, pending records." },
	{ .section = "daemon", .key = "max_depth", .def = "32", .type = WBG_CONF_UINT, .offset = F(max_depth), .min = 1, .max = 4096, .flags = WBG_CONF_RESTART,
	  .doc = "Cgroup levels below cgroup_root that are tracked; deeper ones are counted." },
	{ .section = "daemon", .key = "max_cgroups", .def = "32768", .type = WBG_CONF_UINT, .offset = F(max_cgroups), .min = 0, .max = 1 << 22, .flags = WBG_CONF_RESTART,
	  .doc = "Cgroups tracked at once on the node (0: no cap); more are refused and counted." },
	{ .section = "daemon", .key = "max_cgroups_per_tenant", .def = "2048", .type = WBG_CONF_UINT, .offset = F(max_cgroups_per_tenant), .min = 0, .max = 1 << 22,
	  .flags = WBG_CONF_RESTART,
	  .doc = "... below one tenant's root (a pod, a user's manager, a service's subtree)." },
	{ .section = "daemon", .key = "records_max_size", .def = "4M", .type = WBG_CONF_SIZE, .offset = F(records_max_bytes), .min = 64 << 10, .max = 1 << 30,
	  .flags = WBG_CONF_RESTART, .doc = "handovers.jsonl rotates to handovers.jsonl.1 past this size." },
	{ .section = "daemon", .key = "proc_sys", .def = "/proc/sys", .type = WBG_CONF_PATH, .offset = F(proc_sys), .size = S(proc_sys), .flags = WBG_CONF_RESTART,
	  .doc = "Where the sysctls are (vm/dirty_expire_centisecs below it)." },
	{ .section = "daemon", .key = "host_root", .type = WBG_CONF_PATH_OR_EMPTY, .offset = F(host_root), .size = S(host_root), .flags = WBG_CONF_RESTART,
	  .doc = "The host's root seen from a container with the host's PID namespace (/proc/1/root); empty on the host." },
	{ .section = "daemon", .key = "scratch_cgroup", .type = WBG_CONF_CGROUP_PATH, .offset = F(scratch_cgroup), .size = S(scratch_cgroup),
	  .flags = WBG_CONF_RESTART, .doc = "The scratch memcg of the cleanup cycle; empty: chosen at start." },
	{ .section = "daemon", .key = "watch_config", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(watch_config), .flags = WBG_CONF_RESTART,
	  .doc = "Reload when this file or a drop-in changes (a ConfigMap update)." },
	{ .section = "daemon", .key = "watch_retry_sec", .def = "30", .type = WBG_CONF_SECONDS, .offset = F(watch_retry_usec), .min = 1, .max = 3600,
	  .doc = "While the inotify limit refuses watches, a rescan this often." },
	{ .section = "flush", .key = "enable", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(flush), .doc = "Flush for removed cgroups; no: only the boost acts." },
	{ .section = "flush", .key = "workers", .def = "4", .type = WBG_CONF_UINT, .offset = F(workers), .min = 1, .max = 64, .flags = WBG_CONF_RESTART,
	  .doc = "Flush threads, which is also how many flushes run at once." },
	{ .section = "flush", .key = "timeout_sec", .def = "30", .type = WBG_CONF_SECONDS, .offset = F(timeout_usec), .min = 0.1, .max = 3600,
	  .doc = "A flush that takes longer is recorded as timeout." },
	{ .section = "flush", .key = "passes_FSTYPE", .def = "ext4=2 xfs=1 btrfs=1 default=1", .type = WBG_CONF_PASSES, .offset = F(passes), .min = 0, .max = 4,
	  .doc = "syncfs passes per filesystem type (passes_ext4, passes_default for the others)." },
	{ .section = "flush", .key = "inode_flush", .def = "auto", .type = WBG_CONF_WORD, .offset = F(inode_flush), .words = auto_on_off,
	  .doc = "Write the removed cgroup's own inodes by handle first; auto: syncfs alone for a removal's flush (evidence flushes and a pod's expiry write its inodes whatever this says)." },
	{ .section = "flush", .key = "max_inodes", .def = "8192", .type = WBG_CONF_UINT, .offset = F(max_inodes), .min = 0, .max = 1 << 20, .flags = WBG_CONF_RESTART,
	  .doc = "Inodes recorded per cgroup before its set counts as incomplete." },
	{ .section = "flush", .key = "max_inodes_per_tenant", .def = "16384", .type = WBG_CONF_UINT, .offset = F(max_inodes_per_tenant), .min = 0,
	  .max = WBG_INODES_MAX, .flags = WBG_CONF_RESTART,
	  .doc = "Inode records one tenant's cgroups may hold at once (0: no share); past it their sets are incomplete." },
	{ .section = "flush", .key = "block_devices", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(flush_bdev),
	  .doc = "Also write the block devices' own page cache a cgroup dirtied." },
	{ .section = "flush", .key = "exclude_fstypes", .def = WBG_FLUSH_EXCLUDE_DEFAULT, .type = WBG_CONF_FSTYPES, .offset = F(flush_exclude), .size = S(flush_exclude),
	  .doc = "Filesystem types (globs) never flushed: network and FUSE." },
	{ .section = "flush", .key = "scratch_cycle", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(scratch_cycle),
	  .doc = "After a flush, an empty memcg created and removed moves the dying wb's inodes to a live one." },
	{ .section = "flush", .key = "mode", .def = "on-evidence", .type = WBG_CONF_WORD, .offset = F(flush_mode), .words = flush_modes,
	  .doc = "on-evidence: flush when a live cgroup dirties a removed one's inode; eager: at every removal; exit: "
		 "write an emptied cgroup's own inodes, then watch its removal as on-evidence does." },
	{ .section = "flush", .key = "fs_interval_sec", .def = "1", .type = WBG_CONF_SECONDS, .offset = F(fs_interval_usec), .min = 0, .max = 60,
	  .doc = "The budget: at least this between two flushes of one filesystem." },
	{ .section = "flush", .key = "watch_max", .def = "4096", .type = WBG_CONF_UINT, .offset = F(watch_max), .min = 1, .max = 8192,
	  .doc = "on-evidence: removed cgroups watched at once; more are flushed eagerly." },
	{ .section = "flush", .key = "watch_max_per_tenant", .def = "1024", .type = WBG_CONF_UINT, .offset = F(watch_max_per_tenant), .min = 1, .max = 8192,
	  .doc = "... of one tenant (a pod, a user's session, a service's subtree)." },
	{ .section = "flush", .key = "watch_max_age_sec", .def = "300", .type = WBG_CONF_SECONDS, .offset = F(watch_max_age_usec), .min = 1, .max = 86400,
	  .doc = "A watch not drained by then is flushed and ended." },
	{ .section = "flush", .key = "reflush_sec", .def = "250ms", .type = WBG_CONF_SECONDS, .offset = F(reflush_usec), .min = 0, .max = 600,
	  .doc = "The least time between two flushes of one dying cgroup." },
	{ .section = "flush", .key = "evidence_flushes_per_sec", .def = "50", .type = WBG_CONF_UINT, .offset = F(evidence_per_sec), .min = 0, .max = 100000,
	  .doc = "Flushes on evidence node-wide, a second (0: no cap); the rest wait their turn." },
	{ .section = "flush", .key = "exit_bytes_per_sec", .def = "256M", .type = WBG_CONF_SIZE, .offset = F(exit_bytes_per_sec), .min = 0,
	  .max = 1ULL << 40, .doc = "exit: the recipe's writes per device, a second (0: no cap); past it the next waits." },
	{ .section = "mitigation", .key = "mode", .def = "auto", .type = WBG_CONF_WORD, .offset = F(mitigation), .words = auto_on_off,
	  .doc = "auto: on unless the kernel shows the dying-wb fallback." },
	{ .section = "expiry", .key = "default", .def = "off", .type = WBG_CONF_CENTISECONDS, .offset = F(expiry_default_cs), .min = 1, .max = WBG_EXPIRY_MAX_CS,
	  .flags = WBG_CONF_EMPTY_OFF, .doc = "Pods without a policy; empty: the kernel's expiry." },
	{ .section = "expiry", .key = "mechanism", .def = "per-pod", .type = WBG_CONF_WORD, .offset = F(expiry_mech), .words = expiry_mechs,
	  .doc = "per-pod: wbguardd writes a pod's old inodes; global: the sysctl held at the lowest request." },
	{ .section = "expiry", .key = "min", .def = "1s", .type = WBG_CONF_CENTISECONDS, .offset = F(expiry_min_cs), .min = 1, .max = WBG_EXPIRY_MAX_CS,
	  .doc = "The lower bound of a pod's own annotation." },
	{ .section = "expiry", .key = "max", .def = "24h", .type = WBG_CONF_CENTISECONDS, .offset = F(expiry_max_cs), .min = 1, .max = WBG_EXPIRY_MAX_CS,
	  .doc = "The upper bound of a pod's own annotation." },
	{ .section = "expiry", .key = "per_pod_min", .def = "1s", .type = WBG_CONF_CENTISECONDS, .offset = F(expiry_per_pod_min_cs), .min = 1,
	  .max = WBG_EXPIRY_MAX_CS, .doc = "The per-pod mechanism never writes a pod's inodes more often." },
	{ .section = "expiry", .key = "boost", .def = "5s", .type = WBG_CONF_CENTISECONDS, .offset = F(boost_cs), .min = 1, .max = WBG_EXPIRY_MAX_CS,
	  .flags = WBG_CONF_EMPTY_OFF, .doc = "vm.dirty_expire_centisecs after a failed own flush; off: never." },
	{ .section = "expiry", .key = "boost_window_sec", .def = "60", .type = WBG_CONF_SECONDS, .offset = F(boost_window_usec), .min = 1, .max = 86400,
	  .doc = "How long a boost holds." },
	{ .section = "expiry", .key = "runtime_state_dirs", .def = "/run/crun /run/runc /run/containerd/runc/k8s.io /run/containerd/runc/default /run/docker/runtime-runc/moby", .type = WBG_CONF_PATHS, .offset = F(runtime_dirs),
	  .doc = "Where OCI runtimes keep their containers' state (for the annotations)." },
	{ .section = "bpf", .key = "enable", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(bpf), .flags = WBG_CONF_RESTART,
	  .doc = "Load the BPF programs; without them every block-backed filesystem is flushed." },
	{ .section = "bpf", .key = "dirtied_cgroups", .def = "32768", .type = WBG_CONF_UINT, .offset = F(bpf_dirtied_cgroups), .min = 64, .max = 1048576,
	  .flags = WBG_CONF_RESTART, .doc = "Cgroups' dirtied-device sets the BPF LRU holds." },
	{ .section = "bpf", .key = "inode_records", .def = "65536", .type = WBG_CONF_UINT, .offset = F(bpf_inode_records), .min = 256, .max = 1048576,
	  .flags = WBG_CONF_RESTART,
	  .doc = "(cgroup, inode) records BPF holds on the node, shared fairly among tenants (floors and a pool)." },
	{ .section = "nri", .key = "enable", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(nri), .flags = WBG_CONF_RESTART,
	  .doc = "Connect to the runtime's NRI socket (containerd 2.x, CRI-O) as a plugin, for pods' and containers' names; no effect in a build without NRI." },
	{ .section = "nri", .key = "socket", .def = "/var/run/nri/nri.sock", .type = WBG_CONF_PATH, .offset = F(nri_socket), .size = S(nri_socket),
	  .flags = WBG_CONF_RESTART, .doc = "The runtime's NRI socket." },
	{ .section = "nri", .key = "plugin_name", .def = "wbguard", .type = WBG_CONF_NAME, .offset = F(nri_plugin_name), .size = S(nri_plugin_name),
	  .flags = WBG_CONF_RESTART, .doc = "The name wbguardd registers as." },
	{ .section = "nri", .key = "plugin_index", .def = "50", .type = WBG_CONF_UINT, .offset = F(nri_plugin_index), .min = 0, .max = 99,
	  .flags = WBG_CONF_RESTART, .doc = "Its place among the runtime's plugins (two digits); wbguardd adjusts nothing, so any place will do." },
	{ .section = "metrics", .key = "allow_users", .def = "root prometheus", .type = WBG_CONF_USERS, .offset = F(metrics_allow_users),
	  .size = S(metrics_allow_users), .flags = WBG_CONF_RESTART,
	  .doc = "Who may read /metrics, by the owner of the peer's socket (names that do not exist are skipped; "
		 "a remote peer is refused); empty: everyone. With web_config_file's basic_auth_users, a request with "
		 "credentials is judged by them alone, and one without is let in only from these users (empty: no one). "
		 "/livez and /readyz answer all." },
	{ .section = "metrics", .key = "listen", .def = "127.0.0.1:9573", .type = WBG_CONF_LISTEN, .offset = F(metrics_listen), .size = S(metrics_listen), .flags = WBG_CONF_RESTART,
	  .doc = "Prometheus endpoint (/metrics, /livez, /readyz), or off." },
	{ .section = "metrics", .key = "web_config_file", .type = WBG_CONF_PATH_OR_EMPTY, .offset = F(metrics_web_config),
	  .size = S(metrics_web_config), .flags = WBG_CONF_RESTART,
	  .doc = "TLS and basic auth for `listen`, in the Prometheus exporters' web config format (YAML: "
		 "tls_server_config's cert_file, key_file and min_version; basic_auth_users, bcrypt); re-read at a "
		 "reload, which a bad file refuses. Empty: plain HTTP. See docs/operations.md, remote scraping." },
	{ .section = "metrics", .key = "probe_listen", .def = "off", .type = WBG_CONF_LISTEN, .offset = F(metrics_probe_listen),
	  .size = S(metrics_probe_listen), .flags = WBG_CONF_RESTART,
	  .doc = "/livez and /readyz answered by a thread of their own (root's and our user's peers in this network namespace), or off." },
	{ .section = "metrics", .key = "textfile", .type = WBG_CONF_TEXTFILE, .offset = F(metrics_textfile), .size = S(metrics_textfile),
	  .flags = WBG_CONF_RESTART, .doc = "A node_exporter textfile written atomically; empty: none." },
	{ .section = "metrics", .key = "nfd_features_file", .type = WBG_CONF_FEATURE_FILE, .offset = F(metrics_nfd_features),
	  .size = S(metrics_nfd_features), .flags = WBG_CONF_RESTART,
	  .doc = "node-feature-discovery's local feature file for this node's labels (the kernel's dying-wb fallback, "
		 "guarded), written atomically when they change; empty: none." },
	{ .section = "metrics", .key = "series_retention_sec", .def = "120", .type = WBG_CONF_SECONDS, .offset = F(departed_retention_usec), .min = 1, .max = 86400,
	  .flags = WBG_CONF_RESTART, .doc = "A released cgroup's series stay this long." },
	{ .section = "metrics", .key = "per_cgroup", .def = "yes", .type = WBG_CONF_BOOL, .offset = F(metrics_per_cgroup),
	  .doc = "Per-cgroup series at all; no: node-wide totals only." },
};

/* passes_FSTYPE's default: "ext4=2 xfs=1 ... default=1", each word a key */
static int set_passes_words(const struct wbg_conf_key *k, struct wbg_config *c, const char *words)
{
	_cleanup_free_ char *copy = strdup(words);
	char *saveptr = NULL, key[32];
	int r = copy ? 0 : -ENOMEM;

	for (char *w = copy ? strtok_r(copy, " ", &saveptr) : NULL; w && r >= 0; w = strtok_r(NULL, " ", &saveptr)) {
		char *eq = strchr(w, '=');

		if (!eq || snprintf(key, sizeof(key), "passes_%.*s", (int)(eq - w), w) >= (int)sizeof(key))
			return -EINVAL;
		r = conf_key_set(k, c, key, eq + 1);
	}
	return r;
}

void config_init(struct wbg_config *c)
{
	*c = (struct wbg_config){ 0 };
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const struct wbg_conf_key *k = &keys[i];
		int r;

		if (!k->def)
			continue;
		r = k->type == WBG_CONF_PASSES ? set_passes_words(k, c, k->def) : conf_key_set(k, c, k->key, k->def);
		if (r < 0) {
			/* the table's own default: a bug, which the unit tests
			 * (test-conf-keys) would have shown */
			log_error("[%s] %s: the built-in default '%s' does not parse", k->section, k->key, k->def);
			abort();
		}
	}
}

const struct wbg_conf_key *conf_keys(size_t *ret_n)
{
	*ret_n = ELEMENTSOF(keys);
	return keys;
}

const struct wbg_conf_key *conf_key_find(const char *section, const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		if (strcmp(keys[i].section, section) != 0)
			continue;
		if (keys[i].type == WBG_CONF_PASSES ? strncmp(key, "passes_", 7) == 0 && key[7]
						    : strcmp(keys[i].key, key) == 0)
			return &keys[i];
	}
	return NULL;
}

/* Space-separated paths into a string array (replacing it): roots are
 * relative to cgroup_root (leading '/' dropped), runtime dirs absolute;
 * neither may climb with "..". */
static int parse_paths(const char *v, bool absolute, char **out, unsigned *n, unsigned max)
{
	char *saveptr = NULL, *tok;
	_cleanup_free_ char *copy = strdup(v);

	if (!copy)
		return -ENOMEM;
	config_strv_clear(out, n);
	for (tok = strtok_r(copy, " \t", &saveptr); tok; tok = strtok_r(NULL, " \t", &saveptr)) {
		if (!absolute)
			while (*tok == '/')
				tok++;
		if ((absolute && tok[0] != '/') || strstr(tok, "..") || *n >= max)
			return -EINVAL;
		out[*n] = strdup(tok);
		if (!out[*n])
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

static int parse_path(const char *v, bool absolute, char *buf, size_t size)
{
	if ((absolute && v[0] != '/') || strlen(v) >= size || strstr(v, "/../") || strncmp(v, "../", 3) == 0 ||
	    strcmp(v, "..") == 0)
		return -EINVAL;
	snprintf(buf, size, "%s", v);
	return 0;
}

/* Words that are user names as useradd takes them, or numeric uids. */
static bool users_valid(const char *v)
{
	for (const char *s = v; *s;) {
		size_t n = strcspn(s, " \t");

		if (n) {
			if (strspn(s, "0123456789") == n) {
				if (n > 10)
					return false;
			} else if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z')) || n > 32 ||
				   strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") < n - (s[n - 1] == '$'))
				return false;
		}
		s += n;
		s += strspn(s, " \t");
	}
	return true;
}

static int set_passes(struct wbg_config *c, const char *fstype, unsigned n)
{
	if (strcmp(fstype, "default") == 0)
		return c->default_passes = n, 0;
	for (unsigned i = 0; i < c->n_passes; i++)
		if (strcmp(c->passes[i].fstype, fstype) == 0)
			return c->passes[i].passes = n, 0;
	if (c->n_passes >= WBG_FSTYPES_MAX || strlen(fstype) >= sizeof(c->passes[0].fstype))
		return -E2BIG;
	snprintf(c->passes[c->n_passes].fstype, sizeof(c->passes[0].fstype), "%s", fstype);
	c->passes[c->n_passes++].passes = n;
	return 0;
}

int conf_key_set(const struct wbg_conf_key *k, struct wbg_config *c, const char *key, const char *v)
{
	void *field = (char *)c + k->offset;
	uint64_t u64;
	unsigned u;
	int r;

	if ((k->flags & WBG_CONF_EMPTY_OFF) && (!*v || strcmp(v, "off") == 0 || strcmp(v, "0") == 0))
		return *(unsigned *)field = 0, 0;
	switch (k->type) {
	case WBG_CONF_PATH:
		return parse_path(v, true, field, k->size);
	case WBG_CONF_PATH_OR_EMPTY:
		return *v ? parse_path(v, true, field, k->size) : (*(char *)field = 0, 0);
	case WBG_CONF_CGROUP_PATH:
		return parse_path(v[0] == '/' ? v + 1 : v, false, field, k->size);
	case WBG_CONF_CGROUP_PATHS:
		return parse_paths(v, false, c->roots, &c->n_roots, WBG_ROOTS_MAX);
	case WBG_CONF_PATHS:
		return parse_paths(v, true, c->runtime_dirs, &c->n_runtime_dirs, WBG_RUNTIME_DIRS_MAX);
	case WBG_CONF_UINT:
		return parse_uint(v, (unsigned)k->min, (unsigned)k->max, field);
	case WBG_CONF_BOOL:
		return parse_bool(v, field);
	case WBG_CONF_SECONDS:
		return parse_seconds(v, k->min, k->max, field);
	case WBG_CONF_CENTISECONDS:
		r = parse_expiry(v, &u);
		if (r < 0 || u < k->min || u > k->max)
			return r < 0 ? r : -ERANGE;
		return *(unsigned *)field = u, 0;
	case WBG_CONF_SIZE:
		r = parse_size(v, &u64);
		if (r < 0 || u64 < k->min || u64 > k->max)
			return r < 0 ? r : -ERANGE;
		return *(uint64_t *)field = u64, 0;
	case WBG_CONF_WORD:
		for (int i = 0; k->words[i]; i++)
			if (strcmp(v, k->words[i]) == 0)
				return *(int *)field = i, 0;
		return -EINVAL;
	case WBG_CONF_FSTYPES:
		if (strlen(v) >= k->size || strpbrk(v, "/\\"))
			return -EINVAL;
		snprintf(field, k->size, "%s", v);
		return 0;
	case WBG_CONF_LISTEN:
		if (strcmp(v, "off") == 0 || !*v)
			return *(char *)field = 0, 0;
		if (strlen(v) >= k->size)
			return -EINVAL;
		r = parse_listen(v, NULL);
		if (r < 0)
			return r;
		snprintf(field, k->size, "%s", v);
		return 0;
	case WBG_CONF_TEXTFILE:
		if (!*v)
			return *(char *)field = 0, 0;
		if (strlen(v) < 6 || strcmp(v + strlen(v) - 5, ".prom") != 0)
			return -EINVAL;
		return parse_path(v, true, field, k->size);
	case WBG_CONF_FEATURE_FILE:
		if (!*v)
			return *(char *)field = 0, 0;
		/* nfd-worker skips dot files (its writers' temporaries) */
		if (v[0] != '/' || v[strlen(v) - 1] == '/' || strrchr(v, '/')[1] == '.')
			return -EINVAL;
		return parse_path(v, true, field, k->size);
	case WBG_CONF_PASSES:
		r = parse_uint(v, (unsigned)k->min, (unsigned)k->max, &u);
		return r < 0 ? r : set_passes(c, key + 7, u);
	case WBG_CONF_USERS:
		if (strlen(v) >= k->size || !users_valid(v))
			return -EINVAL;
		snprintf(field, k->size, "%s", v);
		return 0;
	case WBG_CONF_NAME:
		if (!*v || strlen(v) >= k->size || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(v))
			return -EINVAL;
		snprintf(field, k->size, "%s", v);
		return 0;
	}
	return -EINVAL;
}

const char *conf_key_expect(const struct wbg_conf_key *k, char *buf, size_t size)
{
	const char *off = k->flags & WBG_CONF_EMPTY_OFF ? "off, " : "";
	size_t n;

	switch (k->type) {
	case WBG_CONF_PATH:
		return "an absolute path";
	case WBG_CONF_PATH_OR_EMPTY:
		return "an absolute path, or empty";
	case WBG_CONF_CGROUP_PATH:
		return "a cgroup path relative to cgroup_root";
	case WBG_CONF_CGROUP_PATHS:
		return "cgroup paths relative to cgroup_root, separated by spaces";
	case WBG_CONF_PATHS:
		return "absolute paths separated by spaces";
	case WBG_CONF_UINT:
	case WBG_CONF_PASSES:
		snprintf(buf, size, "a number from %.0f to %.0f", k->min, k->max);
		return buf;
	case WBG_CONF_BOOL:
		return "yes or no";
	case WBG_CONF_SECONDS:
		snprintf(buf, size, "seconds from %g to %g, or a duration (500ms, 5s, 2m, 1h)", k->min, k->max);
		return buf;
	case WBG_CONF_CENTISECONDS:
		snprintf(buf, size, "%scentiseconds (500), or a duration (500ms, 5s, 2m, 1h) up to 24h", off);
		return buf;
	case WBG_CONF_SIZE:
		return "a size from 64K to 1G (K, M, G suffixes)";
	case WBG_CONF_WORD:
		buf[0] = 0;
		for (int i = 0; k->words[i]; i++) {
			n = strlen(buf);
			snprintf(buf + n, size - n, "%s%s", i == 0 ? "" : k->words[i + 1] ? ", " : " or ", k->words[i]);
		}
		return buf;
	case WBG_CONF_FSTYPES:
		return "filesystem types or globs separated by spaces (nfs fuse.*), or empty";
	case WBG_CONF_USERS:
		return "user names or numeric uids separated by spaces, or empty";
	case WBG_CONF_LISTEN:
		return "ADDRESS:PORT (IPv6 as [ADDRESS]:PORT) or off";
	case WBG_CONF_TEXTFILE:
		return "an absolute path ending in .prom, or empty";
	case WBG_CONF_FEATURE_FILE:
		return "an absolute path whose file name does not start with '.', or empty";
	case WBG_CONF_NAME:
		return "a name of letters, digits, '-', '_' and '.'";
	}
	return "";
}

/* Exact, so that a value formatted and parsed again is the same. */
static void format_seconds(uint64_t usec, char *buf, size_t size)
{
	if (usec % 1000000 == 0)
		snprintf(buf, size, "%" PRIu64, usec / 1000000);
	else if (usec % 1000 == 0)
		snprintf(buf, size, "%" PRIu64 "ms", usec / 1000);
	else
		snprintf(buf, size, "%" PRIu64 "us", usec);
}

static void format_strv(const char *const *v, unsigned n, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", v[i]);
}

const char *conf_key_format(const struct wbg_conf_key *k, const struct wbg_config *c, char *buf, size_t size)
{
	const void *field = (const char *)c + k->offset;
	const char *const *dirs;
	unsigned n;
	size_t len;

	switch (k->type) {
	case WBG_CONF_PATH:
	case WBG_CONF_PATH_OR_EMPTY:
	case WBG_CONF_CGROUP_PATH:
	case WBG_CONF_FSTYPES:
	case WBG_CONF_TEXTFILE:
	case WBG_CONF_FEATURE_FILE:
	case WBG_CONF_USERS:
	case WBG_CONF_NAME:
		snprintf(buf, size, "%s", (const char *)field);
		break;
	case WBG_CONF_LISTEN:
		snprintf(buf, size, "%s", *(const char *)field ? (const char *)field : "off");
		break;
	case WBG_CONF_CGROUP_PATHS:
		format_strv((const char *const *)c->roots, c->n_roots, buf, size);
		break;
	case WBG_CONF_PATHS:
		dirs = config_runtime_dirs(c, &n);
		format_strv(dirs, n, buf, size);
		break;
	case WBG_CONF_UINT:
		snprintf(buf, size, "%u", *(const unsigned *)field);
		break;
	case WBG_CONF_BOOL:
		snprintf(buf, size, "%s", *(const bool *)field ? "yes" : "no");
		break;
	case WBG_CONF_SECONDS:
		format_seconds(*(const uint64_t *)field, buf, size);
		break;
	case WBG_CONF_CENTISECONDS:
		n = *(const unsigned *)field;
		if (n == 0)
			snprintf(buf, size, "%s", k->flags & WBG_CONF_EMPTY_OFF ? "off" : "0");
		else if (n % 360000 == 0)
			snprintf(buf, size, "%uh", n / 360000);
		else if (n % 100 == 0)
			snprintf(buf, size, "%us", n / 100);
		else
			snprintf(buf, size, "%u", n);
		break;
	case WBG_CONF_SIZE: {
		uint64_t v = *(const uint64_t *)field;

		if (v && v % (1 << 30) == 0)
			snprintf(buf, size, "%" PRIu64 "G", v >> 30);
		else if (v && v % (1 << 20) == 0)
			snprintf(buf, size, "%" PRIu64 "M", v >> 20);
		else if (v && v % (1 << 10) == 0)
			snprintf(buf, size, "%" PRIu64 "K", v >> 10);
		else
			snprintf(buf, size, "%" PRIu64, v);
		break;
	}
	case WBG_CONF_WORD:
		snprintf(buf, size, "%s", k->words[*(const int *)field]);
		break;
	case WBG_CONF_PASSES:
		len = 0;
		buf[0] = 0;
		for (unsigned i = 0; i < c->n_passes && len < size; i++)
			len += (size_t)snprintf(buf + len, size - len, "%s=%u ", c->passes[i].fstype, c->passes[i].passes);
		if (len < size)
			snprintf(buf + len, size - len, "default=%u", c->default_passes);
		break;
	}
	return buf;
}

static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
}

void conf_keys_reference(FILE *f)
{
	struct wbg_config def;
	char expect[256], value[512];

	config_init(&def);
	fputs("# wbguardd's configuration keys\n\n"
	      "Generated from the parser's key table (daemon/lib/config/conf-keys.c) by\n"
	      "`build/tests/test-conf-keys --reference`; a unit test fails when this file\n"
	      "and the table differ. The file, its drop-ins and each key's meaning in\n"
	      "full: wbguard.conf(5) and conf/wbguard.conf.\n\n"
	      "Durations take one syntax everywhere: a number with a unit (`500ms`, `5s`,\n"
	      "`2m`, `1h`); a bare number is in the key's own unit, seconds for the\n"
	      "`*_sec` keys and centiseconds for `[expiry]` (the sysctl's unit).\n"
	      "Keys marked *restart* apply only at a start: a reload that changes one is\n"
	      "refused, naming it (the running configuration stays, the reload metric\n"
	      "says it failed); every other key applies at the reload.\n\n"
	      "| section | key | default | values | applies | meaning |\n"
	      "|---|---|---|---|---|---|\n",
	      f);
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const struct wbg_conf_key *k = &keys[i];

		fprintf(f, "| %s | `%s` | ", k->section, k->key);
		conf_key_format(k, &def, value, sizeof(value));
		if (*value) {
			fputc('`', f);
			md_cell(f, value);
			fputs("` | ", f);
		} else
			fputs("(empty) | ", f);
		md_cell(f, conf_key_expect(k, expect, sizeof(expect)));
		fprintf(f, " | %s | ", k->flags & WBG_CONF_RESTART ? "restart" : "reload");
		md_cell(f, k->doc);
		fputs(" |\n", f);
	}
	fputs("\n`[policy \"GLOB\"]` sections (the first whose glob matches a cgroup's path or\n"
	      "unit wins) take `dirty_expire` (a duration as `[expiry]`), `mechanism`\n"
	      "(per-pod or global) and `allow_annotation` (yes or no).\n",
	      f);
	config_done(&def);
}

/* The effective configuration in the file's own syntax: every key of the
 * table by section (defaults included), then the [policy] sections in file
 * order. Read back, it gives the same configuration. */
void conf_print(FILE *f, const struct wbg_config *c)
{
	const char *section = NULL;
	char value[4096];

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const struct wbg_conf_key *k = &keys[i];

		if (!section || strcmp(section, k->section) != 0) {
			fprintf(f, "%s[%s]\n", section ? "\n" : "", k->section);
			section = k->section;
		}
		conf_key_format(k, c, value, sizeof(value));
		if (strcmp(k->key, "passes_FSTYPE") == 0) {
			/* "TYPE=N ..." as one key a type */
			char *save = NULL;

			for (char *w = strtok_r(value, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
				char *eq = strchr(w, '=');

				if (eq)
					fprintf(f, "passes_%.*s = %s\n", (int)(eq - w), w, eq + 1);
			}
			continue;
		}
		fprintf(f, *value ? "%s = %s\n" : "%s =\n", k->key, value);
	}
	for (unsigned i = 0; i < c->n_policies; i++) {
		const struct wbg_policy_rule *r = &c->policies[i];

		fprintf(f, "\n[policy \"%s\"]\n", r->match);
		if (r->expire_cs)
			fprintf(f, "dirty_expire = %u\n", r->expire_cs);
		if (r->has_mech)
			fprintf(f, "mechanism = %s\n", r->mech == WBG_EXPIRY_GLOBAL ? "global" : "per-pod");
		fprintf(f, "allow_annotation = %s\n", r->allow_annotation ? "yes" : "no");
	}
}
