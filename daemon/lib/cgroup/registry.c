/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Indexes are libc search trees (tsearch): O(log n), no hand-rolled table. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "wbg-base.h"
#include "registry.h"

struct wd_entry {
	int wd;
	bool events;
	struct wbg_cgroup *c;
};

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct wbg_cgroup *)a)->path, ((const struct wbg_cgroup *)b)->path);
}

/* by_unit holds the first cgroup of each unit name; the rest hang from it */
static int cmp_unit(const void *a, const void *b)
{
	return strcmp(((const struct wbg_cgroup *)a)->ident.unit, ((const struct wbg_cgroup *)b)->ident.unit);
}

static struct wbg_cgroup *parent_of(const struct wbg_registry *r, const char *path)
{
	const char *slash = strrchr(path, '/');
	char parent[4096];

	if (!*path)
		return NULL; /* the root */
	if (!slash)
		return registry_find_path(r, "");
	if ((size_t)(slash - path) >= sizeof(parent))
		return NULL;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	return registry_find_path(r, parent);
}

static void unit_link(struct wbg_registry *r, struct wbg_cgroup *c)
{
	struct wbg_cgroup **f;

	if (!c->ident.unit[0])
		return;
	f = tsearch(c, &r->by_unit, cmp_unit);
	if (f && *f != c) {
		c->unit_next = (*f)->unit_next;
		(*f)->unit_next = c;
	}
	/* (no memory for the index: its unit's stop jobs miss it, as they
	 * would a cgroup not tracked) */
}

static void unit_unlink(struct wbg_registry *r, struct wbg_cgroup *c)
{
	struct wbg_cgroup **f;

	if (!c->ident.unit[0] || !(f = tfind(c, &r->by_unit, cmp_unit)))
		return;
	if (*f == c) {
		struct wbg_cgroup *next = c->unit_next;

		tdelete(c, &r->by_unit, cmp_unit);
		if (next)
			(void)tsearch(next, &r->by_unit, cmp_unit); /* (no memory: as above) */
		return;
	}
	for (struct wbg_cgroup *p = *f; p->unit_next; p = p->unit_next)
		if (p->unit_next == c) {
			p->unit_next = c->unit_next;
			return;
		}
}

static int cmp_wd(const void *a, const void *b)
{
	return ((const struct wd_entry *)a)->wd - ((const struct wd_entry *)b)->wd;
}

int registry_add(struct wbg_registry *r, uint64_t id, const char *path, struct wbg_cgroup **ret)
{
	struct wbg_cgroup *c = calloc(1, sizeof(*c)), **found;

	if (!c)
		return -ENOMEM;
	c->id = id;
	c->wd_dir = c->wd_events = -1;
	c->path = strdup(path);
	if (!c->path) {
		free(c);
		return -ENOMEM;
	}
	found = tsearch(c, &r->by_id, cmp_leading_u64);
	if (!found || *found != c) {
		free(c->path);
		free(c);
		return found ? -EEXIST : -ENOMEM;
	}
	found = tsearch(c, &r->by_path, cmp_path);
	if (!found || *found != c) {
		tdelete(c, &r->by_id, cmp_leading_u64);
		free(c->path);
		free(c);
		return found ? -EEXIST : -ENOMEM;
	}
	cgroup_identity_parse(path, &c->ident);
	unit_link(r, c);
	{
		struct wbg_cgroup *p = parent_of(r, path);

		if (p)
			p->n_children++;
	}
	r->n++;
	*ret = c;
	return 0;
}

struct wbg_cgroup *registry_find_id(const struct wbg_registry *r, uint64_t id)
{
	struct wbg_cgroup key = { .id = id }, **f = tfind(&key, &r->by_id, cmp_leading_u64);

	return f ? *f : NULL;
}

struct wbg_cgroup *registry_find_path(const struct wbg_registry *r, const char *path)
{
	struct wbg_cgroup key = { .path = (char *)path }, **f = tfind(&key, &r->by_path, cmp_path);

	return f ? *f : NULL;
}

struct wbg_cgroup *registry_find_wd(const struct wbg_registry *r, int wd, bool *ret_is_events)
{
	struct wd_entry key = { .wd = wd }, **f = tfind(&key, &r->by_wd, cmp_wd);

	if (!f)
		return NULL;
	if (ret_is_events)
		*ret_is_events = (*f)->events;
	return (*f)->c;
}

static void drop_wd(struct wbg_registry *r, int wd)
{
	struct wd_entry key = { .wd = wd }, **f;

	if (wd < 0)
		return;
	f = tfind(&key, &r->by_wd, cmp_wd);
	if (f) {
		struct wd_entry *e = *f;

		tdelete(e, &r->by_wd, cmp_wd);
		free(e);
	}
}

int registry_set_wd(struct wbg_registry *r, struct wbg_cgroup *c, bool events, int wd)
{
	int *slot = events ? &c->wd_events : &c->wd_dir;
	struct wd_entry *e, **f;

	if (*slot == wd)
		return 0;
	/* inotify hands out the same wd for the same inode: an entry of a
	 * cgroup that vanished may still hold it. */
	drop_wd(r, *slot);
	*slot = -1;
	if (wd < 0)
		return 0;
	drop_wd(r, wd);
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct wd_entry){ .wd = wd, .events = events, .c = c };
	f = tsearch(e, &r->by_wd, cmp_wd);
	if (!f) {
		free(e);
		return -ENOMEM;
	}
	*slot = wd;
	return 0;
}

void registry_remove(struct wbg_registry *r, struct wbg_cgroup *c)
{
	registry_set_wd(r, c, false, -1);
	registry_set_wd(r, c, true, -1);
	unit_unlink(r, c);
	{
		struct wbg_cgroup *p = parent_of(r, c->path);

		if (p && p->n_children)
			p->n_children--;
	}
	tdelete(c, &r->by_id, cmp_leading_u64);
	tdelete(c, &r->by_path, cmp_path);
	r->n--;
	free(c->ns_devs);
	free(c->path);
	free(c);
}

bool registry_has_children(const struct wbg_registry *r, const char *path)
{
	struct wbg_cgroup *c = registry_find_path(r, path);

	return c && c->n_children > 0;
}

struct wbg_cgroup *registry_find_unit(const struct wbg_registry *r, const char *unit)
{
	struct wbg_cgroup key = { 0 }, **f;

	snprintf(key.ident.unit, sizeof(key.ident.unit), "%s", unit);
	f = tfind(&key, &r->by_unit, cmp_unit);
	return f ? *f : NULL;
}

struct walk {
	void (*f)(struct wbg_cgroup *c, void *userdata);
	void *userdata;
};

static void walk_action(const void *nodep, VISIT which, void *closure)
{
	struct walk *w = closure;

	if (which == postorder || which == leaf)
		w->f(*(struct wbg_cgroup *const *)nodep, w->userdata);
}

void registry_foreach(const struct wbg_registry *r, void (*f)(struct wbg_cgroup *c, void *userdata), void *userdata)
{
	struct walk w = { f, userdata };

	twalk_r(r->by_id, walk_action, &w);
}

static void free_nothing(void *p)
{
}

static void free_cgroup(void *p)
{
	struct wbg_cgroup *c = p;

	free(c->ns_devs);
	free(c->path);
	free(c);
}

void registry_free(struct wbg_registry *r)
{
	tdestroy(r->by_wd, free);
	tdestroy(r->by_unit, free_nothing);
	tdestroy(r->by_path, free_nothing);
	tdestroy(r->by_id, free_cgroup);
	*r = (struct wbg_registry){ 0 };
}
