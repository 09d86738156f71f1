/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ini.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "conf.h"
#include "wbguard.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"

void config_init(struct wbg_config *c)
{
	*c = (struct wbg_config){
		.cgroup_root = "/sys/fs/cgroup",
		.log_level = LOG_INFO,
		.state_dir = WBG_RUN_DIR,
		.records_max_bytes = 4 << 20,
		.max_depth = 32,
		.bpf_dirtied_cgroups = WBG_DIRTIED_CGROUPS_MAX,
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
		.max_inodes = 4096,
		.flush_bdev = true,
		.scratch_cycle = true,
		.flush_mode = WBG_FLUSH_ON_EVIDENCE,
		.fs_interval_usec = 1000000,
		.watch_max = 4096,
		.watch_max_per_tenant = 1024,
		.watch_max_age_usec = 300ULL * 1000000,
		.reflush_usec = 250000,
		.mitigation = WBG_MITIGATION_AUTO,
		.expiry_mech = WBG_EXPIRY_PER_POD,
		.expiry_min_cs = 100,
		.expiry_max_cs = WBG_EXPIRY_MAX_CS,
		.expiry_per_pod_min_cs = 100,
		.boost_cs = 500, /* seed 000's workaround: 5 s instead of 30 */
		.boost_window_usec = 60ULL * 1000000,
		.bpf = true,
		.metrics_listen = "127.0.0.1:9573",
		.flush_exclude = WBG_FLUSH_EXCLUDE_DEFAULT,
	};
}

static const char *const default_runtime_dirs[] = { "/run/crun", "/run/runc", "/run/containerd/runc/k8s.io",
						     "/run/containerd/runc/default",
						     "/run/docker/runtime-runc/moby" };

static void free_strv(char **v, unsigned *n)
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
	free_strv(c->roots, &c->n_roots);
	free_strv(c->runtime_dirs, &c->n_runtime_dirs);
	free_policies(c);
}

static int copy_strv(char **dst, const char *const *src, unsigned n, unsigned *ret_n)
{
	*ret_n = 0;
	for (unsigned i = 0; i < n; i++) {
		dst[i] = strdup(src[i]);
		if (!dst[i])
			return -ENOMEM;
		*ret_n = i + 1;
	}
	return 0;
}

static int config_copy(struct wbg_config *dst, const struct wbg_config *src)
{
	*dst = *src;
	dst->n_roots = dst->n_runtime_dirs = dst->n_policies = 0;
	if (copy_strv(dst->roots, (const char *const *)src->roots, src->n_roots, &dst->n_roots) < 0 ||
	    copy_strv(dst->runtime_dirs, (const char *const *)src->runtime_dirs, src->n_runtime_dirs,
		      &dst->n_runtime_dirs) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < src->n_policies; i++) {
		dst->policies[i] = src->policies[i];
		dst->policies[i].match = strdup(src->policies[i].match);
		if (!dst->policies[i].match)
			return -ENOMEM;
		dst->n_policies = i + 1;
	}
	return 0;
}

bool config_fstype_excluded(const struct wbg_config *c, const char *fstype)
{
	char copy[sizeof(c->flush_exclude)], *saveptr = NULL;

	snprintf(copy, sizeof(copy), "%s", c->flush_exclude);
	for (char *t = strtok_r(copy, " \t", &saveptr); t; t = strtok_r(NULL, " \t", &saveptr))
		if (fnmatch(t, fstype, 0) == 0)
			return true;
	return false;
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

struct parse_ctx {
	struct wbg_config *c;
	const char *name;
	FILE *f;
	const char *text;
	unsigned line;
	int error;
	char msg[512];
};

/* auto, on, off -> 0, 1, 2: the order of both enums that take them. */
static int parse_auto_on_off(const char *v)
{
	static const char *const words[] = { "auto", "on", "off" };

	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strcmp(v, words[i]) == 0)
			return (int)i;
	return -EINVAL;
}

static int parse_path(const char *v, bool absolute, char *buf, size_t size)
{
	if ((absolute && v[0] != '/') || strlen(v) >= size || strstr(v, "/../") || strncmp(v, "../", 3) == 0)
		return -EINVAL;
	snprintf(buf, size, "%s", v);
	return 0;
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
	free_strv(out, n);
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

/* [policy "GLOB"]: the rule for GLOB, created on first use. */
static int policy_section(struct wbg_config *c, const char *section, struct wbg_policy_rule **ret)
{
	size_t n = strlen(section);
	_cleanup_free_ char *glob = NULL;

	if (n < 10 || strncmp(section, "policy \"", 8) != 0 || section[n - 1] != '"')
		return -ENOKEY;
	glob = strndup(section + 8, n - 9);
	if (!glob)
		return -ENOMEM;
	for (unsigned i = 0; i < c->n_policies; i++)
		if (strcmp(c->policies[i].match, glob) == 0)
			return *ret = &c->policies[i], 0;
	if (c->n_policies >= WBG_POLICIES_MAX)
		return -E2BIG;
	c->policies[c->n_policies] = (struct wbg_policy_rule){ .match = TAKE_PTR(glob) };
	*ret = &c->policies[c->n_policies++];
	return 0;
}

static int set_passes(struct wbg_config *c, const char *fstype, const char *v)
{
	unsigned n;
	int r = parse_uint(v, 0, 4, &n);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < c->n_passes; i++)
		if (strcmp(c->passes[i].fstype, fstype) == 0)
			return c->passes[i].passes = n, 0;
	if (c->n_passes >= WBG_FSTYPES_MAX || strlen(fstype) >= sizeof(c->passes[0].fstype))
		return -E2BIG;
	snprintf(c->passes[c->n_passes].fstype, sizeof(c->passes[0].fstype), "%s", fstype);
	c->passes[c->n_passes++].passes = n;
	return 0;
}

/* Returns 0 on success, -EINVAL for a bad value and -ENOKEY for an unknown
 * key; *expect says what a good value looks like. */
static int set_key(struct wbg_config *c, const char *section, const char *key, const char *v, const char **expect)
{
	int r;

#define IS(s, k) (strcmp(section, s) == 0 && strcmp(key, k) == 0)
	if (IS("daemon", "cgroup_root"))
		return *expect = "an absolute path", parse_path(v, true, c->cgroup_root, sizeof(c->cgroup_root));
	if (IS("daemon", "roots"))
		return *expect = "cgroup paths relative to cgroup_root, separated by spaces",
		       parse_paths(v, false, c->roots, &c->n_roots, WBG_ROOTS_MAX);
	if (IS("daemon", "state_dir"))
		return *expect = "an absolute path", parse_path(v, true, c->state_dir, sizeof(c->state_dir));
	if (IS("daemon", "max_depth"))
		return *expect = "a number of levels from 1 to 4096", parse_uint(v, 1, 4096, &c->max_depth);
	if (IS("daemon", "records_max_size")) {
		*expect = "a size from 64K to 1G (K, M, G suffixes)";
		r = parse_size(v, &c->records_max_bytes);
		return r < 0 || c->records_max_bytes < (64 << 10) || c->records_max_bytes > (1ULL << 30) ? -EINVAL : 0;
	}
	if (IS("daemon", "scratch_cgroup"))
		return *expect = "a cgroup path relative to cgroup_root",
		       parse_path(v[0] == '/' ? v + 1 : v, false, c->scratch_cgroup, sizeof(c->scratch_cgroup));
	if (IS("daemon", "host_root")) {
		if (!*v)
			return c->host_root[0] = 0, 0;
		return *expect = "an absolute path, or empty", parse_path(v, true, c->host_root, sizeof(c->host_root));
	}
	if (IS("daemon", "proc_sys"))
		return *expect = "an absolute path", parse_path(v, true, c->proc_sys, sizeof(c->proc_sys));
	if (IS("daemon", "log_level")) {
		static const char *const levels[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

		*expect = "one of emerg, alert, crit, err, warning, notice, info, debug";
		for (size_t i = 0; i < ELEMENTSOF(levels); i++)
			if (strcmp(v, levels[i]) == 0)
				return c->log_level = (int)i, 0;
		return -EINVAL;
	}
	if (IS("flush", "enable"))
		return *expect = "yes or no", parse_bool(v, &c->flush);
	if (IS("flush", "workers"))
		return *expect = "a number from 1 to 64", parse_uint(v, 1, 64, &c->workers);
	if (IS("flush", "timeout_sec"))
		return *expect = "seconds, from 0.1 to 3600", parse_seconds(v, 0.1, 3600, &c->timeout_usec);
	if (strcmp(section, "flush") == 0 && strncmp(key, "passes_", 7) == 0) {
		*expect = "a number of syncfs passes from 0 to 4";
		if (strcmp(key + 7, "default") == 0)
			return parse_uint(v, 0, 4, &c->default_passes);
		return set_passes(c, key + 7, v);
	}
	if (IS("flush", "inode_flush")) {
		*expect = "auto, on or off";
		r = parse_auto_on_off(v);
		return r < 0 ? r : (c->inode_flush = (enum wbg_inode_flush)r, 0);
	}
	if (IS("flush", "max_inodes"))
		return *expect = "a number from 0 to 1048576", parse_uint(v, 0, 1 << 20, &c->max_inodes);
	if (IS("flush", "block_devices"))
		return *expect = "yes or no", parse_bool(v, &c->flush_bdev);
	if (IS("flush", "exclude_fstypes")) {
		*expect = "filesystem types or globs separated by spaces (nfs fuse.*), or empty";
		if (strlen(v) >= sizeof(c->flush_exclude) || strpbrk(v, "/\\"))
			return -EINVAL;
		snprintf(c->flush_exclude, sizeof(c->flush_exclude), "%s", v);
		return 0;
	}
	if (IS("flush", "scratch_cycle"))
		return *expect = "yes or no", parse_bool(v, &c->scratch_cycle);
	if (IS("flush", "mode")) {
		*expect = "eager or on-evidence";
		if (strcmp(v, "eager") == 0)
			c->flush_mode = WBG_FLUSH_EAGER;
		else if (strcmp(v, "on-evidence") == 0)
			c->flush_mode = WBG_FLUSH_ON_EVIDENCE;
		else
			return -EINVAL;
		return 0;
	}
	if (IS("flush", "fs_interval_sec"))
		return *expect = "seconds, from 0 to 60", parse_seconds(v, 0, 60, &c->fs_interval_usec);
	if (IS("flush", "watch_max"))
		return *expect = "a number from 1 to 8192", parse_uint(v, 1, 8192, &c->watch_max);
	if (IS("flush", "watch_max_per_tenant"))
		return *expect = "a number from 1 to 8192", parse_uint(v, 1, 8192, &c->watch_max_per_tenant);
	if (IS("flush", "watch_max_age_sec"))
		return *expect = "seconds, from 1 to 86400", parse_seconds(v, 1, 86400, &c->watch_max_age_usec);
	if (IS("flush", "reflush_sec"))
		return *expect = "seconds, from 0 to 600", parse_seconds(v, 0, 600, &c->reflush_usec);
	if (IS("mitigation", "mode")) {
		*expect = "auto, on or off";
		r = parse_auto_on_off(v);
		return r < 0 ? r : (c->mitigation = (enum wbg_mitigation)r, 0);
	}
	if (IS("expiry", "default")) {
		*expect = "empty (the kernel's), centiseconds, or a duration (500ms, 5s, 2m)";
		if (!*v)
			return c->expiry_default_cs = 0, 0;
		return parse_expiry(v, &c->expiry_default_cs);
	}
	if (IS("expiry", "min"))
		return *expect = "centiseconds or a duration (500ms, 5s, 2m)", parse_expiry(v, &c->expiry_min_cs);
	if (IS("expiry", "max"))
		return *expect = "centiseconds or a duration (500ms, 5s, 2m)", parse_expiry(v, &c->expiry_max_cs);
	if (IS("expiry", "per_pod_min"))
		return *expect = "centiseconds or a duration (500ms, 5s, 2m)", parse_expiry(v, &c->expiry_per_pod_min_cs);
	if (IS("expiry", "mechanism"))
		return *expect = "per-pod or global", parse_expiry_mech(v, &c->expiry_mech);
	if (IS("expiry", "boost")) {
		*expect = "off, centiseconds, or a duration (5s)";
		if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
			return c->boost_cs = 0, 0;
		return parse_expiry(v, &c->boost_cs);
	}
	if (IS("expiry", "boost_window_sec"))
		return *expect = "seconds, from 1 to 86400", parse_seconds(v, 1, 86400, &c->boost_window_usec);
	if (IS("expiry", "runtime_state_dirs"))
		return *expect = "absolute paths separated by spaces",
		       (c->runtime_dirs_set = true,
			parse_paths(v, true, c->runtime_dirs, &c->n_runtime_dirs, WBG_RUNTIME_DIRS_MAX));
	if (strncmp(section, "policy", 6) == 0) {
		struct wbg_policy_rule *rule;

		*expect = "a section named [policy \"GLOB\"]";
		r = policy_section(c, section, &rule);
		if (r == -ENOKEY)
			return -EINVAL;
		if (r < 0)
			return r;
		if (strcmp(key, "dirty_expire") == 0)
			return *expect = "centiseconds or a duration (500ms, 5s, 2m)", parse_expiry(v, &rule->expire_cs);
		if (strcmp(key, "allow_annotation") == 0)
			return *expect = "yes or no", parse_bool(v, &rule->allow_annotation);
		if (strcmp(key, "mechanism") == 0) {
			*expect = "per-pod or global";
			r = parse_expiry_mech(v, &rule->mech);
			if (r == 0)
				rule->has_mech = true;
			return r;
		}
		return -ENOKEY;
	}
	if (IS("bpf", "dirtied_cgroups"))
		return *expect = "a number of cgroups from 64 to 1048576",
		       parse_uint(v, 64, 1048576, &c->bpf_dirtied_cgroups);
	if (IS("bpf", "enable"))
		return *expect = "yes or no", parse_bool(v, &c->bpf);
	if (IS("metrics", "per_cgroup"))
		return *expect = "yes or no", parse_bool(v, &c->metrics_per_cgroup);
	if (IS("daemon", "watch_retry_sec"))
		return *expect = "seconds from 1 to 3600", parse_seconds(v, 1, 3600, &c->watch_retry_usec);
	if (IS("daemon", "watch_config"))
		return *expect = "yes or no", parse_bool(v, &c->watch_config);
	if (IS("metrics", "series_retention_sec"))
		return *expect = "seconds, from 1 to 86400",
		       parse_seconds(v, 1, 86400, &c->departed_retention_usec);
	if (IS("metrics", "textfile")) {
		*expect = "an absolute path ending in .prom, or empty";
		if (!*v)
			return c->metrics_textfile[0] = 0, 0;
		if (strlen(v) < 6 || strcmp(v + strlen(v) - 5, ".prom") != 0)
			return -EINVAL;
		return parse_path(v, true, c->metrics_textfile, sizeof(c->metrics_textfile));
	}
	if (IS("metrics", "listen")) {
		*expect = "ADDRESS:PORT (IPv6 as [ADDRESS]:PORT) or off";
		if (strcmp(v, "off") == 0 || !*v)
			return c->metrics_listen[0] = 0, 0;
		r = parse_listen(v, NULL);
		if (r < 0)
			return r;
		snprintf(c->metrics_listen, sizeof(c->metrics_listen), "%s", v);
		return 0;
	}
#undef IS
	return -ENOKEY;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *p = user;
	const char *expect = "";
	int r;

	if (p->error)
		return 1; /* report the first error only */
	if (!key) /* a section header alone */
		return 1;
	r = set_key(p->c, section, key, value, &expect);
	if (r == -ENOKEY) {
		/* as systemd does: a key a newer wbguard knows (a ConfigMap
		 * edited for it) does not stop this one; said and counted */
		log_warning("%s:%u: unknown key '%s' in section [%s], ignored", p->name, p->line, key, section);
		p->c->unknown_keys++;
		return 1;
	}
	if (r == -ENOMEM)
		snprintf(p->msg, sizeof(p->msg), "%s:%u: out of memory", p->name, p->line);
	else if (r < 0)
		snprintf(p->msg, sizeof(p->msg), "%s:%u: [%s] %s = '%s': expected %s", p->name, p->line, section, key,
			 value, expect);
	if (r < 0)
		p->error = r == -ENOMEM ? r : -EINVAL; /* the message says what was wrong */
	return 1;
}

/* inih reads line by line through this, which is how we know the line. */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *p = stream;

	p->line++;
	if (p->f)
		return fgets(str, num, p->f);
	if (!p->text || !*p->text)
		return NULL;
	{
		const char *nl = strchr(p->text, '\n');
		size_t n = nl ? (size_t)(nl - p->text + 1) : strlen(p->text);

		if (n >= (size_t)num)
			n = num - 1;
		memcpy(str, p->text, n);
		str[n] = 0;
		p->text += n;
	}
	return str;
}

static int parse(struct wbg_config *c, struct parse_ctx *p)
{
	struct wbg_config tmp;
	int r;

	/* Parse into a copy so a bad file leaves *c as it was. */
	r = config_copy(&tmp, c);
	if (r < 0)
		return log_oom();
	/* cppcheck-suppress autoVariables ; p is the caller's, reset below */
	p->c = &tmp;
	r = ini_parse_stream(reader, p, handler, p);
	p->c = NULL;
	if (r > 0 && !p->error) {
		/* inih's own syntax error (no '=', unclosed section) */
		snprintf(p->msg, sizeof(p->msg), "%s:%d: syntax error (expected [section] or key = value)", p->name, r);
		p->error = -EINVAL;
	}
	if (r < 0 && !p->error)
		p->error = -ENOMEM;
	if (p->error) {
		config_done(&tmp);
		return log_error_errno(p->error, "%s", p->msg);
	}
	config_done(c);
	*c = tmp;
	return 0;
}

int config_parse_string(struct wbg_config *c, const char *name, const char *text)
{
	struct parse_ctx p = { .name = name, .text = text };

	return parse(c, &p);
}

int config_parse_file(struct wbg_config *c, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	struct parse_ctx p = { .name = path };

	if (!f)
		return -errno;
	p.f = f;
	return parse(c, &p);
}

int config_load(struct wbg_config *c, const char *path)
{
	struct wbg_config tmp;
	char pattern[PATH_MAX];
	const char *slash = strrchr(path, '/');
	glob_t g = { 0 };
	int r;

	r = config_copy(&tmp, c);
	if (r < 0)
		return log_oom();
	tmp.unknown_keys = 0; /* this load's */
	r = config_parse_file(&tmp, path);
	if (r == -ENOENT)
		log_debug("%s not found, using defaults", path);
	else if (r < 0) {
		if (r != -EINVAL)
			log_error_errno(r, "Cannot read %s", path);
		goto fail;
	}
	snprintf(pattern, sizeof(pattern), "%.*s/conf.d/*.conf", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			r = config_parse_file(&tmp, g.gl_pathv[i]);
			if (r < 0) {
				if (r != -EINVAL)
					log_error_errno(r, "Cannot read %s", g.gl_pathv[i]);
				globfree(&g);
				goto fail;
			}
		}
	}
	globfree(&g);
	config_done(c);
	*c = tmp;
	return 0;
fail:
	config_done(&tmp);
	return r;
}

unsigned config_passes_for(const struct wbg_config *c, const char *fstype)
{
	for (unsigned i = 0; i < c->n_passes; i++)
		if (strcmp(c->passes[i].fstype, fstype) == 0)
			return c->passes[i].passes;
	return c->default_passes;
}
