/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The node-wide expiry boost, rate-limited per tenant: a boost lowers
 * vm.dirty_expire_centisecs for everyone, so no tenant may keep it lowered
 * by failing flushes of its own again and again. Each tenant
 * (handover_tenant()) has a bucket of BOOST_LIMIT_BURST boosts that refills
 * one per BOOST_LIMIT_REFILL_USEC; the table holds BOOST_LIMIT_TENANTS
 * tenants, the least recently seen making room (a tenant evicted starts
 * full again, which costs at most one burst per eviction).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define BOOST_LIMIT_TENANTS 64
#define BOOST_LIMIT_BURST 3
#define BOOST_LIMIT_REFILL_USEC (20ULL * 60 * 1000 * 1000)

struct boost_limit {
	struct {
		uint64_t tenant;
		uint64_t refilled; /* when its tokens were last topped up */
		uint64_t seen;
		unsigned tokens;
	} t[BOOST_LIMIT_TENANTS];
	uint64_t refused, evicted;
};

/* Whether tenant may boost now (a token taken), or not (counted). */
bool boost_limit_take(struct boost_limit *l, uint64_t tenant, uint64_t now);
