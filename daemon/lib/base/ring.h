/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A bounded ring of pointers in arrival order: what the tables that drop
 * their oldest entry to make room (containers.h, departed.h) keep beside
 * their index. Entries may be cleared in place (NULL) and compacted later,
 * so that dropping many costs one pass. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct wbg_ring {
	void **v;
	size_t cap, head, n;
};

int ring_init(struct wbg_ring *r, size_t cap);
void ring_free(struct wbg_ring *r);
static inline bool ring_full(const struct wbg_ring *r)
{
	return r->n == r->cap;
}
/* The i-th oldest slot (0: the oldest); NULL where cleared. */
void **ring_slot(const struct wbg_ring *r, size_t i);
/* Appends p; the ring must not be full. */
void ring_push(struct wbg_ring *r, void *p);
/* Takes the oldest entry out (NULL when empty). */
void *ring_pop(struct wbg_ring *r);
/* Closes the gaps cleared slots left, keeping the order. */
void ring_compact(struct wbg_ring *r);
/* Takes p out, keeping the others' order. */
void ring_remove(struct wbg_ring *r, const void *p);
