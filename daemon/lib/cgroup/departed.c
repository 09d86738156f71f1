/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "departed.h"
#include "wbg-base.h"

int departed_init(struct wbg_departed *d, size_t cap)
{
	*d = (struct wbg_departed){ 0 };
	return cap ? ring_init(&d->ring, cap) : -EINVAL;
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
	ring_free(&d->ring);
	*d = (struct wbg_departed){ 0 };
}

int departed_add(struct wbg_departed *d, uint64_t id, const char *path, uint64_t *ret_evicted)
{
	struct wbg_departed_entry key = { .id = id }, *e, **found;
	uint64_t evicted = 0;

	if (d->ring.cap == 0)
		return -EINVAL;
	if (tfind(&key, &d->by_id, cmp_leading_u64)) {
		*ret_evicted = 0;
		return 0;
	}
	if (ring_full(&d->ring))
		ring_compact(&d->ring);
	if (ring_full(&d->ring)) {
		struct wbg_departed_entry *old = ring_pop(&d->ring);

		evicted = old->id;
		tdelete(old, &d->by_id, cmp_leading_u64);
		entry_free(old);
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
	ring_push(&d->ring, e);
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

	for (size_t i = 0; i < d->ring.n; i++) {
		void **s = ring_slot(&d->ring, i);
		struct wbg_departed_entry *e = *s;

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
		ring_compact(&d->ring);
	if (ret_next)
		*ret_next = next;
	return dropped;
}
