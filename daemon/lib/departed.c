/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "departed.h"
#include "macro.h"

int departed_init(struct wbg_departed *d, size_t cap)
{
	*d = (struct wbg_departed){ .cap = cap };
	d->ring = calloc(cap, sizeof(*d->ring)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	return d->ring ? 0 : -ENOMEM;
}

static void entry_free(void *p)
{
	struct wbg_departed_entry *e = p;

	free(e->path);
	free(e);
}

void departed_free(struct wbg_departed *d)
{
	tdestroy(d->by_id, entry_free);
	free(d->ring);
	*d = (struct wbg_departed){ 0 };
}

/* The ring holds entries in arrival order; dropped ones leave NULL holes
 * that the head skips. */
static struct wbg_departed_entry **slot(struct wbg_departed *d, size_t i)
{
	return &d->ring[(d->head + i) % d->cap];
}

static void compact(struct wbg_departed *d)
{
	size_t j = 0;

	for (size_t i = 0; i < d->n; i++) {
		struct wbg_departed_entry *e = *slot(d, i);

		if (e)
			*slot(d, j++) = e;
	}
	for (size_t i = j; i < d->n; i++)
		*slot(d, i) = NULL;
	d->n = j;
}

int departed_add(struct wbg_departed *d, uint64_t id, const char *path, uint64_t *ret_evicted)
{
	struct wbg_departed_entry key = { .id = id }, *e, **found;
	uint64_t evicted = 0;

	if (d->cap == 0)
		return -EINVAL;
	if (tfind(&key, &d->by_id, cmp_leading_u64)) {
		*ret_evicted = 0;
		return 0;
	}
	if (d->n == d->cap)
		compact(d);
	if (d->n == d->cap) {
		struct wbg_departed_entry *old = *slot(d, 0);

		evicted = old->id;
		tdelete(old, &d->by_id, cmp_leading_u64);
		entry_free(old);
		d->head = (d->head + 1) % d->cap;
		d->n--;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->path = strdup(path);
	found = e->path ? tsearch(e, &d->by_id, cmp_leading_u64) : NULL;
	if (!found) {
		entry_free(e);
		return -ENOMEM;
	}
	*slot(d, d->n++) = e;
	*ret_evicted = evicted;
	return 0;
}

const struct wbg_departed_entry *departed_find(const struct wbg_departed *d, uint64_t id)
{
	struct wbg_departed_entry key = { .id = id }, **found = tfind(&key, &d->by_id, cmp_leading_u64);

	return found ? *found : NULL;
}

int departed_mark_released(struct wbg_departed *d, uint64_t id, uint64_t now)
{
	struct wbg_departed_entry *e = (struct wbg_departed_entry *)departed_find(d, id);

	if (!e)
		return 0;
	if (!e->released)
		e->released_usec = now;
	e->released = true;
	return 1;
}

size_t departed_drop_released(struct wbg_departed *d, uint64_t cutoff, void (*f)(uint64_t id, void *userdata),
			      void *userdata, uint64_t *ret_next)
{
	size_t dropped = 0;
	uint64_t next = 0;

	for (size_t i = 0; i < d->n; i++) {
		struct wbg_departed_entry **s = slot(d, i), *e = *s;

		if (!e || !e->released)
			continue;
		if (e->released_usec > cutoff) {
			if (!next || e->released_usec < next)
				next = e->released_usec;
			continue;
		}
		if (f)
			f(e->id, userdata);
		tdelete(e, &d->by_id, cmp_leading_u64);
		entry_free(e);
		*s = NULL;
		dropped++;
	}
	if (dropped)
		compact(d);
	if (ret_next)
		*ret_next = next;
	return dropped;
}
