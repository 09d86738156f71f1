/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <json-c/json.h>

#include "wbg-base.h"
#include "pending.h"

int pending_save(const char *dir, uint64_t id, const char *path, uint64_t cgroup_id, const dev_t *devs,
		 const bool *bdev, size_t n)
{
	struct json_object *o = json_object_new_object(), *t = json_object_new_array();
	char p[4096];
	int r;

	json_object_object_add(o, "id", json_object_new_uint64(id));
	json_object_object_add(o, "cgroup", json_object_new_string(path));
	json_object_object_add(o, "cgroup_id", json_object_new_uint64(cgroup_id));
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_new_object();

		json_object_object_add(d, "major", json_object_new_uint64(major(devs[i])));
		json_object_object_add(d, "minor", json_object_new_uint64(minor(devs[i])));
		json_object_object_add(d, "bdev", json_object_new_boolean(bdev[i]));
		json_object_array_add(t, d);
	}
	json_object_object_add(o, "targets", t);
	snprintf(p, sizeof(p), "%s/pending-%" PRIu64 ".json", dir, id);
	/* in /run, per handover: no fsync (a crash of the node empties it anyway) */
	r = write_file_atomic(p, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), false, 0640);
	json_object_put(o);
	return r;
}

void pending_drop(const char *dir, uint64_t id)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/pending-%" PRIu64 ".json", dir, id);
	(void)unlink(p);
}

static int parse_one(const char *text, struct wbg_pending *ret)
{
	struct json_object *o = json_tokener_parse(text), *v, *t;
	struct wbg_pending p = { 0 };
	int r = -EINVAL;

	if (!o || !json_object_object_get_ex(o, "id", &v) || (p.id = json_object_get_uint64(v)) == 0 ||
	    !json_object_object_get_ex(o, "cgroup", &v) || !json_object_is_type(v, json_type_string) ||
	    !json_object_object_get_ex(o, "targets", &t) || !json_object_is_type(t, json_type_array))
		goto out;
	p.path = strdup(json_object_get_string(v));
	if (json_object_object_get_ex(o, "cgroup_id", &v))
		p.cgroup_id = json_object_get_uint64(v);
	p.n = json_object_array_length(t);
	p.devs = calloc(p.n + 1, sizeof(*p.devs));
	p.bdev = calloc(p.n + 1, sizeof(*p.bdev));
	if (!p.path || !p.devs || !p.bdev) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p.n; i++) {
		struct json_object *d = json_object_array_get_idx(t, i), *ma, *mi, *b;

		if (!json_object_object_get_ex(d, "major", &ma) || !json_object_object_get_ex(d, "minor", &mi))
			goto out;
		p.devs[i] = makedev(json_object_get_uint64(ma), json_object_get_uint64(mi));
		p.bdev[i] = json_object_object_get_ex(d, "bdev", &b) && json_object_get_boolean(b);
	}
	*ret = p;
	p = (struct wbg_pending){ 0 };
	r = 0;
out:
	pending_free(&p, 1);
	json_object_put(o);
	return r;
}

int pending_load(const char *dir, struct wbg_pending **ret, size_t *ret_n)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct wbg_pending *v = NULL;
	struct dirent *de;
	size_t n = 0;

	if (!d) {
		*ret = NULL;
		*ret_n = 0;
		return errno == ENOENT ? 0 : -errno;
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		char p[4096];
		struct wbg_pending one, *nv;
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "pending-", 8) != 0 || len < 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (read_small_file_at(AT_FDCWD, p, 1 << 20, &text) < 0 || parse_one(text, &one) < 0) {
			log_warning("Ignoring and removing the malformed %s", p);
			(void)unlink(p);
			continue;
		}
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			pending_free(&one, 1);
			pending_free(v, n);
			free(v);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = one;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

void pending_free(struct wbg_pending *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		free(p[i].path);
		free(p[i].devs);
		free(p[i].bdev);
	}
}

uint64_t pending_max_id(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t max = 0;

	while (d && (de = readdir(d))) {
		unsigned long long id;

		if (sscanf(de->d_name, "pending-%llu.json", &id) != 1 || id <= max)
			continue;
		if (id > WBG_IDS_MAX)
			log_warning("%s/%s: an id above %llu is none of ours; ignored", dir, de->d_name, WBG_IDS_MAX);
		else
			max = id;
	}
	return max;
}

static void ids_reserve(struct wbg_ids *ids)
{
	char text[32];
	int r;

	snprintf(text, sizeof(text), "%" PRIu64 "\n", ids->last + WBG_IDS_BLOCK);
	/* in /run, like the pending records: no fsync */
	r = write_file_atomic(ids->path, text, false, 0640);
	if (r < 0) {
		/* ids stay unique within this run and above every pending
		 * record; only a later run may reuse some */
		ids->errors++;
		log_warning_errno(r, "Cannot save the handover id reservation in %s", ids->path);
	}
	ids->reserved = ids->last + WBG_IDS_BLOCK;
}

void ids_open(struct wbg_ids *ids, const char *dir, uint64_t floor)
{
	_cleanup_free_ char *text = NULL;
	uint64_t saved = 0;

	*ids = (struct wbg_ids){ 0 };
	snprintf(ids->path, sizeof(ids->path), "%s/handover-ids", dir);
	if (read_small_file_at(AT_FDCWD, ids->path, 64, &text) == 0) {
		char *end;

		errno = 0;
		saved = strtoull(text, &end, 10);
		if (errno || end == text || (*end && *end != '\n') || saved > WBG_IDS_MAX) {
			log_warning("%s: not a number up to 2^53; handover ids go on from %" PRIu64, ids->path, floor);
			saved = 0;
		}
	}
	ids->last = saved > floor ? saved : floor;
	ids->reserved = ids->last;
}

uint64_t ids_next(struct wbg_ids *ids)
{
	if (ids->last >= ids->reserved)
		ids_reserve(ids);
	return ++ids->last;
}
