/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "oci.h"

static struct json_object *parse_object(const char *text, size_t len, size_t max, const char *what, char *err,
					size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (len > max) {
		snprintf(err, errlen, "%s: %zu bytes, more than the %zu allowed", what, len, max);
		return NULL;
	}
	tok = json_tokener_new_ex(64);
	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		snprintf(err, errlen, "%s: not JSON (%s)", what,
			 o || e == json_tokener_continue ? "the input ends too early" : json_tokener_error_desc(e));
		json_object_put(o);
		o = NULL;
	} else if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "%s: not a JSON object", what);
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* A string field: required or not, no longer than size - 1, no control
 * characters. Too long is -E2BIG (our limit); control characters are
 * ctrl_err: -EINVAL where they make the field malformed, -E2BIG where the
 * spec allows them (paths) and only we do not. */
static int get_string_ctrl(struct json_object *o, const char *what, const char *key, bool required, char *buf,
			   size_t size, int ctrl_err, char *err, size_t errlen)
{
	struct json_object *v;
	const char *s;

	buf[0] = 0;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
		if (required)
			snprintf(err, errlen, "%s: '%s' is missing", what, key);
		return required ? -EINVAL : 0;
	}
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "%s: '%s' must be a string", what, key);
		return -EINVAL;
	}
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) >= size || strlen(s) != (size_t)json_object_get_string_len(v)) {
		snprintf(err, errlen, "%s: '%s' is too long or has a NUL byte", what, key);
		return -E2BIG;
	}
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen, "%s: '%s' has control characters", what, key);
			return ctrl_err;
		}
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

static int get_string(struct json_object *o, const char *what, const char *key, bool required, char *buf,
		      size_t size, char *err, size_t errlen)
{
	return get_string_ctrl(o, what, key, required, buf, size, -EINVAL, err, errlen);
}

/* annotations: an object of strings, or absent (then empty). */
static int get_annotations(struct json_object *o, const char *what, struct json_object **ret, char *err,
			   size_t errlen)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, "annotations", &v) || json_object_is_type(v, json_type_null)) {
		*ret = json_object_new_object();
		return *ret ? 0 : -ENOMEM;
	}
	if (!json_object_is_type(v, json_type_object)) {
		snprintf(err, errlen, "%s: 'annotations' must be an object", what);
		return -EINVAL;
	}
	json_object_object_foreach(v, key, val)
	{
		if (!json_object_is_type(val, json_type_string)) {
			snprintf(err, errlen, "%s: annotation '%.64s' must be a string", what, key);
			return -EINVAL;
		}
	}
	*ret = json_object_get(v);
	return 0;
}

int oci_state_parse(const char *text, size_t len, struct oci_state *ret, char *err, size_t errlen)
{
	struct json_object *o = parse_object(text, len, OCI_STATE_MAX, "state", err, errlen), *v;
	struct oci_state s = { 0 };
	int r;

	if (!o)
		return -EINVAL;
	r = get_string(o, "state", "id", true, s.id, sizeof(s.id), err, errlen);
	if (r == 0 && !s.id[0]) {
		snprintf(err, errlen, "state: 'id' is empty");
		r = -EINVAL;
	}
	if (r == 0)
		r = get_string(o, "state", "status", false, s.status, sizeof(s.status), err, errlen);
	if (r == 0)
		r = get_string(o, "state", "bundle", true, s.bundle, sizeof(s.bundle), err, errlen);
	if (r == 0 && s.bundle[0] != '/') {
		snprintf(err, errlen, "state: 'bundle' must be an absolute path");
		r = -EINVAL;
	}
	if (r == 0 && json_object_object_get_ex(o, "pid", &v) && !json_object_is_type(v, json_type_null)) {
		int64_t pid = json_object_get_int64(v);

		if (!json_object_is_type(v, json_type_int) || pid < 0 || pid > INT_MAX) {
			snprintf(err, errlen, "state: 'pid' must be a process id");
			r = -EINVAL;
		} else
			s.pid = (int)pid;
	}
	if (r == 0)
		r = get_annotations(o, "state", &s.annotations, err, errlen);
	json_object_put(o);
	if (r < 0)
		return r;
	*ret = s;
	return 0;
}

void oci_state_done(struct oci_state *s)
{
	json_object_put(s->annotations);
	s->annotations = NULL;
}

static int get_mount(struct json_object *m, size_t i, struct oci_mount *ret, char *err, size_t errlen)
{
	char what[32], dst[4096], src[4096], type[64];
	struct json_object *opts;
	int r;

	snprintf(what, sizeof(what), "config: mounts[%zu]", i);
	if (!json_object_is_type(m, json_type_object)) {
		snprintf(err, errlen, "%s must be an object", what);
		return -EINVAL;
	}
	r = get_string_ctrl(m, what, "destination", true, dst, sizeof(dst), -E2BIG, err, errlen);
	if (r == 0)
		r = get_string_ctrl(m, what, "source", false, src, sizeof(src), -E2BIG, err, errlen);
	if (r == 0)
		r = get_string(m, what, "type", false, type, sizeof(type), err, errlen);
	if (r < 0)
		return r;
	*ret = (struct oci_mount){ .rw = true, .bind = strcmp(type, "bind") == 0 };
	if (json_object_object_get_ex(m, "options", &opts) && json_object_is_type(opts, json_type_array))
		for (size_t k = 0; k < json_object_array_length(opts); k++) {
			const char *o = json_object_get_string(json_object_array_get_idx(opts, k));

			if (!o)
				continue;
			if (strcmp(o, "ro") == 0)
				ret->rw = false;
			else if (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0)
				ret->bind = true;
		}
	ret->destination = strdup(dst);
	ret->source = strdup(src);
	ret->type = strdup(type);
	return ret->destination && ret->source && ret->type ? 0 : -ENOMEM;
}

int oci_config_parse(const char *text, size_t len, struct oci_config *ret, char *err, size_t errlen)
{
	struct json_object *o, *linux_, *mounts, *root;
	struct oci_config c = { 0 };
	int r = 0;

	if (len > OCI_CONFIG_MAX) {
		snprintf(err, errlen, "config: %zu bytes, more than the %d the hook reads", len, OCI_CONFIG_MAX);
		return -E2BIG;
	}
	o = parse_object(text, len, OCI_CONFIG_MAX, "config", err, errlen);
	if (!o)
		return -EINVAL;
	if (json_object_object_get_ex(o, "root", &root)) {
		if (!json_object_is_type(root, json_type_object)) {
			snprintf(err, errlen, "config: 'root' must be an object");
			r = -EINVAL;
		} else
			r = get_string_ctrl(root, "config: root", "path", false, c.root_path, sizeof(c.root_path),
					    -E2BIG, err, errlen);
	}
	if (r == 0 && json_object_object_get_ex(o, "linux", &linux_)) {
		if (!json_object_is_type(linux_, json_type_object)) {
			snprintf(err, errlen, "config: 'linux' must be an object");
			r = -EINVAL;
		} else
			r = get_string(linux_, "config: linux", "cgroupsPath", false, c.cgroups_path,
				       sizeof(c.cgroups_path), err, errlen);
	}
	if (r == 0 && json_object_object_get_ex(o, "mounts", &mounts)) {
		if (!json_object_is_type(mounts, json_type_array)) {
			snprintf(err, errlen, "config: 'mounts' must be an array");
			r = -EINVAL;
		} else if (json_object_array_length(mounts) > OCI_MOUNTS_MAX) {
			snprintf(err, errlen, "config: 'mounts': %zu, more than the %d the hook reads",
				 json_object_array_length(mounts), OCI_MOUNTS_MAX);
			r = -E2BIG;
		} else
			for (size_t i = 0; r == 0 && i < json_object_array_length(mounts); i++) {
				r = get_mount(json_object_array_get_idx(mounts, i), i, &c.mounts[i], err, errlen);
				if (r == 0 || c.mounts[i].destination)
					c.n_mounts = i + 1;
			}
	}
	if (r == 0)
		r = get_annotations(o, "config", &c.annotations, err, errlen);
	json_object_put(o);
	if (r < 0) {
		oci_config_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

void oci_config_done(struct oci_config *c)
{
	for (size_t i = 0; i < c->n_mounts; i++) {
		free(c->mounts[i].destination);
		free(c->mounts[i].source);
		free(c->mounts[i].type);
	}
	c->n_mounts = 0;
	json_object_put(c->annotations);
	c->annotations = NULL;
}

/* Appends one component, refusing what could leave the subtree. */
static int append(char *buf, size_t size, size_t *n, const char *comp, size_t len)
{
	if (len == 0 || (len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)comp[i] < 0x20 || comp[i] == 0x7f || comp[i] == '/')
			return -EINVAL;
	if (*n + (*n > 0) + len + 1 > size)
		return -ENAMETOOLONG;
	if (*n > 0)
		buf[(*n)++] = '/';
	memcpy(buf + *n, comp, len);
	*n += len;
	buf[*n] = 0;
	return 0;
}

/* systemd's slice nesting: "a-b-c.slice" lives in "a.slice/a-b.slice/". */
static int append_slice(char *buf, size_t size, size_t *n, const char *slice, size_t len)
{
	const char *suffix = ".slice";
	size_t sl = strlen(suffix);
	int r;

	if (len <= sl || strncmp(slice + len - sl, suffix, sl) != 0 || memchr(slice, '/', len))
		return -EINVAL;
	if (len == 2 + sl && slice[0] == '-') /* "-.slice": the root */
		return 0;
	for (size_t i = 0; i < len - sl; i++)
		if (slice[i] == '-') {
			if (i == 0 || slice[i - 1] == '-')
				return -EINVAL;
			char part[PATH_MAX];

			if (i + sl >= sizeof(part))
				return -ENAMETOOLONG;
			memcpy(part, slice, i);
			memcpy(part + i, suffix, sl);
			part[i + sl] = 0;
			r = append(buf, size, n, part, i + sl);
			if (r < 0)
				return r;
		}
	return append(buf, size, n, slice, len);
}

int oci_cgroup_path(const char *cgroups_path, char *ret, size_t size)
{
	const char *c1, *c2;
	size_t n = 0;
	int r;

	if (!cgroups_path || !*cgroups_path || size == 0)
		return -EINVAL;
	ret[0] = 0;
	c1 = strchr(cgroups_path, ':');
	if (c1 && cgroups_path[0] != '/') {
		/* systemd driver: "slice:prefix:name" */
		char scope[PATH_MAX];

		c2 = strchr(c1 + 1, ':');
		if (!c2 || strchr(c2 + 1, ':'))
			return -EINVAL;
		if (c1 > cgroups_path) {
			r = append_slice(ret, size, &n, cgroups_path, c1 - cgroups_path);
			if (r < 0)
				return r;
		}
		if (snprintf(scope, sizeof(scope), "%.*s-%s.scope", (int)(c2 - c1 - 1), c1 + 1, c2 + 1) >= (int)sizeof(scope))
			return -ENAMETOOLONG;
		return append(ret, size, &n, c2 == c1 + 1 ? scope + 1 : scope, strlen(c2 == c1 + 1 ? scope + 1 : scope));
	}
	for (const char *p = cgroups_path; *p;) {
		const char *e;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchr(p, '/');
		if (!e)
			e = p + strlen(p);
		r = append(ret, size, &n, p, e - p);
		if (r < 0)
			return r;
		p = e;
	}
	return n > 0 ? 0 : -EINVAL;
}
