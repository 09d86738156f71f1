/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The bounded ring of pointers the evicting tables share (ring.h). */
#include "ring.h"
#include "tap.h"

int main(void)
{
	struct wbg_ring r;
	int v[6];

	CHECK(ring_init(&r, 4) == 0 && r.n == 0 && !ring_full(&r), "empty");
	for (int i = 0; i < 4; i++)
		ring_push(&r, &v[i]);
	CHECK(ring_full(&r) && *ring_slot(&r, 0) == &v[0] && *ring_slot(&r, 3) == &v[3], "full, oldest first");
	CHECK(ring_pop(&r) == &v[0] && r.n == 3, "the oldest leaves first");
	ring_push(&r, &v[4]); /* wraps */
	ring_remove(&r, &v[2]);
	CHECK(r.n == 3 && *ring_slot(&r, 0) == &v[1] && *ring_slot(&r, 1) == &v[3] && *ring_slot(&r, 2) == &v[4],
	      "taking one out of the middle keeps the others' order, across the wrap");
	*ring_slot(&r, 0) = NULL;
	*ring_slot(&r, 2) = NULL;
	ring_compact(&r);
	CHECK(r.n == 1 && *ring_slot(&r, 0) == &v[3], "cleared slots compacted in one pass");
	ring_remove(&r, &v[5]);
	CHECK(r.n == 1, "removing what is not there is a no-op");
	CHECK(ring_pop(&r) == &v[3] && ring_pop(&r) == NULL, "empty again: pop gives NULL");
	ring_free(&r);
	return tap_done();
}
