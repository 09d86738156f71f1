/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <search.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "wbg-base.h"
#include "runtime-index.h"

#define ROOTS_MAX 16
/* A directory changed this recently may change again within the same
 * timestamp tick without its mtime moving: listed again until it is older
 * (as git does with racily clean index entries). */
#define RACY_NSEC 2000000000LL

struct rt_entry {
	char *name; /* the container's directory in its root */
	bool parsed;
	struct wbg_container_state st; /* valid when parsed */
	uint64_t seen;
};

struct root {
	char *dir;
	struct timespec mtime;
	bool listed, racy;
	void *by_name;    /* tsearch of struct rt_entry */
	size_t unparsed; /* entries whose state was not there yet */
};

struct runtime_index {
	struct root roots[ROOTS_MAX];
	size_t n_roots;
	void *by_cgroup; /* parsed entries of every root, by st.cgroup */
	uint64_t generation;
	struct runtime_index_stats stats;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct rt_entry *)a)->name, ((const struct rt_entry *)b)->name);
}

static int cmp_cgroup(const void *a, const void *b)
{
	return strcmp(((const struct rt_entry *)a)->st.cgroup, ((const struct rt_entry *)b)->st.cgroup);
}

static void entry_free(void *p)
{
	struct rt_entry *e = p;

	runtime_state_done(&e->st);
	free(e->name);
	free(e);
}

/* Out of both indexes, and freed. */
static void entry_drop(struct runtime_index *x, struct root *r, struct rt_entry *e)
{
	if (e->parsed) {
		struct rt_entry **other = tfind(e, &x->by_cgroup, cmp_cgroup);

		/* two containers claiming one cgroup: only this one's node goes */
		if (other && *other == e)
			tdelete(e, &x->by_cgroup, cmp_cgroup);
	} else if (r->unparsed > 0)
		r->unparsed--;
	tdelete(e, &r->by_name, cmp_name);
	entry_free(e);
	x->stats.containers--;
}

static void drop_all(struct runtime_index *x, struct root *r)
{
	while (r->by_name)
		entry_drop(x, r, *(struct rt_entry **)r->by_name);
}

int runtime_index_new(struct runtime_index **ret)
{
	struct runtime_index *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	*ret = x;
	return 0;
}

static void free_nothing(void *p)
{
}

void runtime_index_free(struct runtime_index *x)
{
	if (!x)
		return;
	tdestroy(x->by_cgroup, free_nothing);
	for (size_t i = 0; i < x->n_roots; i++) {
		tdestroy(x->roots[i].by_name, entry_free);
		free(x->roots[i].dir);
	}
	free(x);
}

static struct root *root_for(struct runtime_index *x, const char *dir)
{
	for (size_t i = 0; i < x->n_roots; i++)
		if (strcmp(x->roots[i].dir, dir) == 0)
			return &x->roots[i];
	if (x->n_roots == ROOTS_MAX)
		return NULL;
	x->roots[x->n_roots].dir = strdup(dir);
	return x->roots[x->n_roots].dir ? &x->roots[x->n_roots++] : NULL;
}

/* Entries not seen by the last listing, collected and then deleted. */
struct sweep {
	uint64_t gen;
	struct rt_entry **v;
	size_t n, cap;
};

static void collect(const void *node, VISIT which, void *userdata)
{
	struct rt_entry *e = *(struct rt_entry *const *)node;
	struct sweep *s = userdata;

	if ((which != postorder && which != leaf) || e->seen == s->gen)
		return;
	if (s->n == s->cap) {
		struct rt_entry **v = realloc(s->v, (s->cap = s->cap ? s->cap * 2 : 16) * sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */

		if (!v)
			return; /* dropped next time */
		s->v = v;
	}
	s->v[s->n++] = e;
}

/* Lists the root again: new directories become entries (parsed later),
 * vanished ones are dropped. */
static int list_root(struct runtime_index *x, struct root *r, const struct stat *st)
{
	_cleanup_closedir_ DIR *d = opendir(r->dir);
	struct sweep s = { .gen = ++x->generation };
	struct timespec now;
	struct dirent *de;

	if (!d)
		return -errno;
	x->stats.listings++;
	while ((de = readdir(d))) {
		struct rt_entry key = { .name = de->d_name }, *e, **found;

		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		found = tfind(&key, &r->by_name, cmp_name);
		if (found) {
			(*found)->seen = s.gen;
			continue;
		}
		e = calloc(1, sizeof(*e));
		if (!e || !(e->name = strdup(de->d_name))) {
			free(e);
			return -ENOMEM;
		}
		e->seen = s.gen;
		if (!tsearch(e, &r->by_name, cmp_name)) {
			entry_free(e);
			return -ENOMEM;
		}
		r->unparsed++;
		x->stats.containers++;
	}
	twalk_r(r->by_name, collect, &s);
	for (size_t i = 0; i < s.n; i++)
		entry_drop(x, r, s.v[i]);
	free(s.v);
	clock_gettime(CLOCK_REALTIME, &now);
	r->mtime = st->st_mtim;
	r->listed = true;
	r->racy = (now.tv_sec - st->st_mtim.tv_sec) * 1000000000LL + (now.tv_nsec - st->st_mtim.tv_nsec) < RACY_NSEC;
	return 0;
}

struct parse {
	struct runtime_index *x;
	struct root *r;
	int dirfd;
	const char *cgroup_root;
	int error;
};

/* Parses an entry whose state was not there at the last look. */
static void parse_one(const void *node, VISIT which, void *userdata)
{
	struct rt_entry *e = *(struct rt_entry *const *)node;
	struct parse *p = userdata;
	int r;

	if ((which != postorder && which != leaf) || e->parsed || p->error)
		return;
	p->x->stats.parses++;
	r = runtime_state_read(p->dirfd, e->name, p->cgroup_root, &e->st);
	if (r < 0) {
		p->error = r;
		return;
	}
	if (r == 0)
		return;
	e->parsed = true;
	p->r->unparsed--;
	if (!tsearch(e, &p->x->by_cgroup, cmp_cgroup))
		p->error = -ENOMEM;
}

static int copy_state(const struct wbg_container_state *from, struct wbg_container_state *ret)
{
	*ret = *from;
	ret->cgroup = strdup(from->cgroup);
	ret->annotations = json_object_get(from->annotations);
	if (!ret->cgroup) {
		runtime_state_done(ret);
		return -ENOMEM;
	}
	return 1;
}

int runtime_index_find(struct runtime_index *x, const char *const *roots, size_t n_roots, const char *cgroup_root,
		       const char *path, struct wbg_container_state *ret)
{
	struct rt_entry key = { 0 }, **hit;
	size_t n;

	x->stats.lookups++;
	for (size_t i = 0; i < n_roots; i++) {
		struct root *r = root_for(x, roots[i]);
		_cleanup_close_ int fd = -EBADF;
		struct parse p = { .x = x, .r = r, .cgroup_root = cgroup_root };
		struct stat st;

		if (!r)
			return -ENOMEM;
		fd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			drop_all(x, r); /* the runtime's root is gone, or was never there */
			r->listed = false;
			continue;
		}
		if (!r->listed || r->racy || st.st_mtim.tv_sec != r->mtime.tv_sec ||
		    st.st_mtim.tv_nsec != r->mtime.tv_nsec) {
			int k = list_root(x, r, &st);

			if (k < 0)
				return k;
		}
		if (r->unparsed) {
			p.dirfd = fd;
			twalk_r(r->by_name, parse_one, &p);
			if (p.error)
				return p.error;
		}
	}
	/* path as the states' cgroups are kept: no leading, no trailing '/' */
	while (*path == '/')
		path++;
	n = strlen(path);
	key.st.cgroup = strndup(path, n && path[n - 1] == '/' ? n - 1 : n);
	if (!key.st.cgroup)
		return -ENOMEM;
	hit = tfind(&key, &x->by_cgroup, cmp_cgroup);
	free(key.st.cgroup);
	return hit ? copy_state(&(*hit)->st, ret) : 0;
}

void runtime_index_stats(const struct runtime_index *x, struct runtime_index_stats *ret)
{
	*ret = x->stats;
}
