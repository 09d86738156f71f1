/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <string.h>

#include "departed.h"
#include "tap.h"

static void note(uint64_t id, void *userdata)
{
	uint64_t *sum = userdata;

	*sum += id;
}

int main(void)
{
	struct wbg_departed d;
	uint64_t ev = 99, sum = 0;

	CHECK(departed_init(&d, 3) == 0, "init");
	CHECK(departed_add(&d, 10, "a/b", &ev) == 0 && ev == 0, "add 10");
	CHECK(departed_add(&d, 10, "a/b", &ev) == 0 && ev == 0 && d.ring.n == 1, "adding again keeps one entry");
	CHECK(departed_add(&d, 11, "a/c", &ev) == 0 && departed_add(&d, 12, "a/d", &ev) == 0 && ev == 0,
	      "add 11, 12");
	CHECK(departed_find(&d, 11) && strcmp(departed_find(&d, 11)->path, "a/c") == 0, "find by id");
	CHECK(departed_add(&d, 13, "a/e", &ev) == 0 && ev == 10, "full: the oldest (10) makes room");
	CHECK(!departed_find(&d, 10) && departed_find(&d, 13), "10 gone, 13 there");
	CHECK(departed_mark_released(&d, 12, 1000) == 1, "release a known one at t=1000");
	CHECK(departed_mark_released(&d, 77, 1000) == 0, "release an unknown one");
	{
		uint64_t next = 0;

		/* a scrape (or two, or a probe) before the retention is over
		 * sees it every time: nothing but time drops it */
		CHECK(departed_drop_released(&d, 999, note, &sum, &next) == 0 && departed_find(&d, 12) && next == 1000,
		      "within its retention: kept, and when it is due is said");
	}
	CHECK(departed_drop_released(&d, 1000, note, &sum, NULL) == 1 && sum == 12,
	      "its retention over: dropped, callback first");
	CHECK(!departed_find(&d, 12) && d.ring.n == 2, "dropped");
	CHECK(departed_add(&d, 14, "a/f", &ev) == 0 && ev == 0, "a dropped entry's room is reused");
	CHECK(departed_add(&d, 15, "a/g", &ev) == 0 && ev == 11, "then the oldest left (11) goes");
	CHECK(departed_find(&d, 13) && departed_find(&d, 14) && departed_find(&d, 15), "13, 14, 15 kept in order");
	departed_mark_released(&d, 13, 5);
	departed_mark_released(&d, 15, 6);
	departed_mark_released(&d, 15, 900); /* released twice: the first time counts */
	sum = 0;
	CHECK(departed_drop_released(&d, 10, note, &sum, NULL) == 2 && sum == 28 && d.ring.n == 1, "two dropped at once");
	CHECK(departed_add(&d, 16, "x", &ev) == 0 && departed_add(&d, 17, "y", &ev) == 0 && ev == 0 &&
		      departed_add(&d, 18, "z", &ev) == 0 && ev == 14,
	      "eviction order still oldest first after drops");
	departed_free(&d);
	return tap_done();
}
