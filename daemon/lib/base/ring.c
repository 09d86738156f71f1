/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "ring.h"

int ring_init(struct wbg_ring *r, size_t cap)
{
	*r = (struct wbg_ring){ .cap = cap };
	r->v = cap ? calloc(cap, sizeof(*r->v)) : NULL; /* NOLINT(bugprone-sizeof-expression): an array of pointers */
	return cap && !r->v ? -ENOMEM : 0;
}

void ring_free(struct wbg_ring *r)
{
	free(r->v);
	*r = (struct wbg_ring){ 0 };
}

void **ring_slot(const struct wbg_ring *r, size_t i)
{
	return &r->v[(r->head + i) % r->cap];
}

void ring_push(struct wbg_ring *r, void *p)
{
	*ring_slot(r, r->n++) = p;
}

void *ring_pop(struct wbg_ring *r)
{
	void *p;

	if (r->n == 0)
		return NULL;
	p = *ring_slot(r, 0);
	*ring_slot(r, 0) = NULL;
	r->head = (r->head + 1) % r->cap;
	r->n--;
	return p;
}

void ring_compact(struct wbg_ring *r)
{
	size_t j = 0;

	for (size_t i = 0; i < r->n; i++) {
		void *p = *ring_slot(r, i);

		if (p)
			*ring_slot(r, j++) = p;
	}
	for (size_t i = j; i < r->n; i++)
		*ring_slot(r, i) = NULL;
	r->n = j;
}

void ring_remove(struct wbg_ring *r, const void *p)
{
	if (r->n && *ring_slot(r, 0) == p) { /* the oldest: the common case */
		(void)ring_pop(r);
		return;
	}
	for (size_t i = 0; i < r->n; i++)
		if (*ring_slot(r, i) == p) {
			*ring_slot(r, i) = NULL;
			ring_compact(r);
			return;
		}
}
