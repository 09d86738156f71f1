/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ini.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "conf-keys.h"
#include "conf.h"
#include "wbguard.h"
#include "wbg-base.h"

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

struct parse_ctx {
	struct wbg_config *c;
	const char *name;
	FILE *f;
	const char *text;
	unsigned line;
	int error;
	char msg[512];
};

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

/* Returns 0 on success, -EINVAL or -ERANGE for a bad value and -ENOKEY
 * for an unknown key; expect says what a good value looks like. */
static int set_key(struct wbg_config *c, const char *section, const char *key, const char *v, char *expect,
		   size_t size)
{
	const struct wbg_conf_key *k;
	const char *e;
	int r;

	if (strncmp(section, "policy", 6) == 0) {
		struct wbg_policy_rule *rule;

		snprintf(expect, size, "a section named [policy \"GLOB\"]");
		r = policy_section(c, section, &rule);
		if (r == -ENOKEY)
			return -EINVAL;
		if (r < 0)
			return r;
		if (strcmp(key, "dirty_expire") == 0)
			return snprintf(expect, size, "centiseconds or a duration (500ms, 5s, 2m)"),
			       parse_expiry(v, &rule->expire_cs);
		if (strcmp(key, "allow_annotation") == 0)
			return snprintf(expect, size, "yes or no"), parse_bool(v, &rule->allow_annotation);
		if (strcmp(key, "mechanism") == 0) {
			snprintf(expect, size, "per-pod or global");
			r = parse_expiry_mech(v, &rule->mech);
			if (r == 0)
				rule->has_mech = true;
			return r;
		}
		return -ENOKEY;
	}
	k = conf_key_find(section, key);
	if (!k)
		return -ENOKEY;
	e = conf_key_expect(k, expect, size);
	if (e != expect)
		snprintf(expect, size, "%s", e);
	return conf_key_set(k, c, key, v);
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *p = user;
	char expect[256] = "";
	int r;

	if (p->error)
		return 1; /* report the first error only */
	if (!key) /* a section header alone */
		return 1;
	r = set_key(p->c, section, key, value, expect, sizeof(expect));
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

struct wbg_expiry_rules config_expiry_rules(const struct wbg_config *c)
{
	return (struct wbg_expiry_rules){
		.policies = c->policies,
		.n_policies = c->n_policies,
		.mech = c->expiry_mech,
		.default_cs = c->expiry_default_cs,
		.min_cs = c->expiry_min_cs,
		.max_cs = c->expiry_max_cs,
		.per_pod_min_cs = c->expiry_per_pod_min_cs,
	};
}

struct wbg_plan_params config_plan_params(const struct wbg_config *c)
{
	return (struct wbg_plan_params){
		.inodes = c->inode_flush == WBG_INODE_FLUSH_ON,
		.block_devices = c->flush_bdev,
		.exclude_fstypes = c->flush_exclude,
		.passes = c->passes,
		.n_passes = c->n_passes,
		.default_passes = c->default_passes,
	};
}

int config_keep_restart_keys(struct wbg_config *c, const struct wbg_config *running,
			     void (*changed)(const struct wbg_conf_key *k, const char *running, const char *wanted))
{
	char was[1024], want[1024];
	size_t n;
	const struct wbg_conf_key *keys = conf_keys(&n);
	int r;

	for (size_t i = 0; i < n; i++) {
		if (!(keys[i].flags & WBG_CONF_RESTART))
			continue;
		conf_key_format(&keys[i], running, was, sizeof(was));
		conf_key_format(&keys[i], c, want, sizeof(want));
		if (strcmp(was, want) == 0)
			continue;
		if (changed)
			changed(&keys[i], was, want);
		/* the running value, through the same parser (formats parse
		 * back to themselves: test-conf-keys) */
		r = conf_key_set(&keys[i], c, keys[i].key, was);
		if (r < 0)
			return r;
	}
	return 0;
}
