/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A token bucket: at most burst at once and per_sec a second on average.
 * The caller owns the struct (zeroed: full at its first use) and the clock. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct wbg_rate {
	unsigned tokens;
	bool used; /* false: full at the first take */
	uint64_t refilled;
};

/* Takes one token if there is one at now (microseconds). per_sec 0: no
 * limit. */
bool rate_take(struct wbg_rate *r, unsigned per_sec, unsigned burst, uint64_t now);
