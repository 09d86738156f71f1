/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "rate-limit.h"

bool rate_take(struct wbg_rate *r, unsigned per_sec, unsigned burst, uint64_t now)
{
	uint64_t step;

	if (!per_sec)
		return true;
	step = 1000000 / per_sec ? 1000000 / per_sec : 1;
	if (!r->used) {
		r->used = true;
		r->tokens = burst;
		r->refilled = now;
	}
	/* a time before the last refill (a caller's clock read earlier)
	 * adds nothing */
	while (r->tokens < burst && now > r->refilled && now - r->refilled >= step) {
		r->tokens++;
		r->refilled += step;
	}
	if (r->tokens >= burst)
		r->refilled = now; /* a full bucket does not bank time */
	if (!r->tokens)
		return false;
	r->tokens--;
	return true;
}

bool rate_take_keyed(struct wbg_rate_bucket *b, size_t n, uint64_t key, uint64_t key2, unsigned per_sec,
		     unsigned burst, uint64_t now)
{
	size_t i, lru = 0;

	for (i = 0; i < n; i++) {
		if (b[i].key == key && b[i].key2 == key2 && b[i].rate.used)
			break;
		if (b[i].rate.refilled < b[lru].rate.refilled)
			lru = i;
	}
	if (i == n) {
		i = lru;
		b[i] = (struct wbg_rate_bucket){ .key = key, .key2 = key2 };
	}
	return rate_take(&b[i].rate, per_sec, burst, now);
}
