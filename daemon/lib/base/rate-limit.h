/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A token bucket: at most burst at once and per_sec a second on average.
 * The caller owns the struct (zeroed: full at its first use) and the clock. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wbg_rate {
	unsigned tokens;
	bool used; /* false: full at the first take */
	uint64_t refilled;
};

/* Takes one token if there is one at now (microseconds). per_sec 0: no
 * limit. */
bool rate_take(struct wbg_rate *r, unsigned per_sec, unsigned burst, uint64_t now);

/* Buckets by key (a device, a tenant): a fixed array, a key not seen
 * lately taking the least recently refilled bucket's place (it starts
 * full: a bound on what many keys get together is the caller's). */
struct wbg_rate_bucket {
	uint64_t key, key2;
	struct wbg_rate rate;
};

bool rate_take_keyed(struct wbg_rate_bucket *b, size_t n, uint64_t key, uint64_t key2, unsigned per_sec,
		     unsigned burst, uint64_t now);
