/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "wbg-base.h"
#include "runtime-state.h"

#define STATE_MAX (1024 * 1024) /* runc's state.json is a few KiB */

static const char *skip_slashes(const char *p)
{
	while (*p == '/')
		p++;
	return p;
}

/* Paths equal up to leading slashes and one trailing slash. */
static int same_cgroup(const char *a, const char *b)
{
	size_t na, nb;

	a = skip_slashes(a);
	b = skip_slashes(b);
	na = strlen(a);
	nb = strlen(b);
	if (na && a[na - 1] == '/')
		na--;
	if (nb && b[nb - 1] == '/')
		nb--;
	return na == nb && strncmp(a, b, na) == 0;
}

static struct json_object *load_json(int dirfd, const char *path)
{
	_cleanup_free_ char *text = NULL;

	if (read_small_file_at(dirfd, path, STATE_MAX, &text) < 0)
		return NULL;
	return json_tokener_parse(text);
}

static const char *get_string(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

/* The cgroup path relative to the cgroupfs root, without leading or one
 * trailing slash, malloc'ed. */
static char *relative_cgroup(const char *cg)
{
	size_t n;

	cg = skip_slashes(cg);
	n = strlen(cg);
	if (n && cg[n - 1] == '/')
		n--;
	return strndup(cg, n);
}

/* crun: status says where the cgroup is; config.json has the annotations. */
static int read_crun(int dirfd, const char *id, struct wbg_container_state *ret)
{
	char p[PATH_MAX];
	struct json_object *st, *cfg, *ann;
	const char *cg, *bundle;
	int found = 0;

	snprintf(p, sizeof(p), "%s/status", id);
	st = load_json(dirfd, p);
	if (!st)
		return 0;
	cg = get_string(st, "cgroup-path");
	if (cg) {
		snprintf(p, sizeof(p), "%s/config.json", id);
		cfg = load_json(dirfd, p);
		*ret = (struct wbg_container_state){ .runtime = "crun", .cgroup = relative_cgroup(cg) };
		snprintf(ret->id, sizeof(ret->id), "%s", id);
		bundle = get_string(st, "bundle");
		snprintf(ret->bundle, sizeof(ret->bundle), "%s", bundle ? bundle : "");
		if (cfg && json_object_object_get_ex(cfg, "annotations", &ann) && json_object_is_type(ann, json_type_object))
			ret->annotations = json_object_get(ann);
		else
			ret->annotations = json_object_new_object();
		json_object_put(cfg);
		found = ret->annotations && ret->cgroup ? 1 : -ENOMEM;
		if (found < 0)
			runtime_state_done(ret);
	}
	json_object_put(st);
	return found;
}

/* runc: the annotations are labels "key=value" (beside "bundle=..."). */
static int read_runc(int dirfd, const char *id, const char *cgroup_root, struct wbg_container_state *ret)
{
	char p[PATH_MAX];
	struct json_object *st, *config, *cgroups, *paths, *labels;
	const char *cg = NULL;
	int found = 0;

	snprintf(p, sizeof(p), "%s/state.json", id);
	st = load_json(dirfd, p);
	if (!st)
		return 0;
	if (json_object_object_get_ex(st, "cgroup_paths", &paths))
		cg = get_string(paths, ""); /* cgroup v2: the one unified path, absolute */
	if (cg && strncmp(cg, cgroup_root, strlen(cgroup_root)) == 0 && cg[strlen(cgroup_root)] == '/')
		cg += strlen(cgroup_root);
	else if (json_object_object_get_ex(st, "config", &config) && json_object_object_get_ex(config, "cgroups", &cgroups))
		cg = get_string(cgroups, "path");
	if (cg) {
		*ret = (struct wbg_container_state){ .runtime = "runc", .cgroup = relative_cgroup(cg) };
		snprintf(ret->id, sizeof(ret->id), "%s", id);
		ret->annotations = json_object_new_object();
		if (!ret->annotations || !ret->cgroup) {
			runtime_state_done(ret);
			json_object_put(st);
			return -ENOMEM;
		}
		if (json_object_object_get_ex(st, "config", &config) && json_object_object_get_ex(config, "labels", &labels) &&
		    json_object_is_type(labels, json_type_array))
			for (size_t i = 0; i < json_object_array_length(labels); i++) {
				const char *l = json_object_get_string(json_object_array_get_idx(labels, i));
				const char *eq = l ? strchr(l, '=') : NULL;
				_cleanup_free_ char *k = eq ? strndup(l, eq - l) : NULL;

				if (!k)
					continue;
				if (strcmp(k, "bundle") == 0)
					snprintf(ret->bundle, sizeof(ret->bundle), "%s", eq + 1);
				else
					json_object_object_add(ret->annotations, k, json_object_new_string(eq + 1));
			}
		found = 1;
	}
	json_object_put(st);
	return found;
}

int runtime_state_read(int dirfd, const char *id, const char *cgroup_root, struct wbg_container_state *ret)
{
	int r = read_crun(dirfd, id, ret);

	return r != 0 ? r : read_runc(dirfd, id, cgroup_root, ret);
}

int runtime_state_find(const char *const *roots, size_t n_roots, const char *cgroup_root, const char *path,
		       struct wbg_container_state *ret)
{
	for (size_t i = 0; i < n_roots; i++) {
		_cleanup_closedir_ DIR *d = opendir(roots[i]);
		struct dirent *de;

		if (!d)
			continue; /* that runtime is not used here */
		while ((de = readdir(d))) {
			int r;

			if (de->d_name[0] == '.' || de->d_type != DT_DIR)
				continue;
			r = runtime_state_read(dirfd(d), de->d_name, cgroup_root, ret);
			if (r < 0)
				return r;
			if (r > 0 && same_cgroup(ret->cgroup, path))
				return 1;
			if (r > 0)
				runtime_state_done(ret);
		}
	}
	return 0;
}

const char *runtime_state_annotation(const struct wbg_container_state *s, const char *key)
{
	return s->annotations ? get_string(s->annotations, key) : NULL;
}

void runtime_state_done(struct wbg_container_state *s)
{
	json_object_put(s->annotations);
	s->annotations = NULL;
	free(s->cgroup);
	s->cgroup = NULL;
}
