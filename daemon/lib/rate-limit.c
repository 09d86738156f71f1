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
