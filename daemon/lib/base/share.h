/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A node-wide table's fair shares. A cap per tenant alone lets a few
 * tenants fill the table together (16 pods at 2,048 fill 32,768 tracked
 * cgroups); here each tenant has a floor it can always take, whatever the
 * others hold, and draws what it holds above its floor from one pool of
 * at least half the table. The other half is the floors of up to
 * SHARE_FLOOR_TENANTS tenants (floor_tenants: fewer in a small table):
 * until that many tenants hold entries, a tenant below its floor is
 * refused only by a table that is really full. Entries of no tenant
 * (slices, the root) count against the table alone.
 *
 * The table keeps each tenant's count; a take says what the tenant held
 * before, and remembers whether the entry came from the pool so that its
 * give puts it back where it came from. O(1).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SHARE_FLOOR_TENANTS 64

enum wbg_share_refusal {
	WBG_SHARE_TAKEN = 0,
	WBG_SHARE_FULL,   /* the table's capacity */
	WBG_SHARE_TENANT, /* the tenant's cap */
	WBG_SHARE_POOL,   /* above its floor, and the pool is taken */
	_WBG_SHARE_REFUSAL_MAX,
};

struct wbg_share {
	unsigned capacity;   /* 0: no bound on the table */
	unsigned per_tenant; /* 0: no cap per tenant */
	unsigned floor;      /* held by any tenant whatever the others hold */
	unsigned floor_tenants; /* ... by that many tenants at once */
	unsigned pool;       /* above the floors, every tenant together */
	unsigned used, pooled;
	uint64_t refused[_WBG_SHARE_REFUSAL_MAX];
};

/* Sets the bounds (and from them the floor and the pool); what is held
 * and counted stays. */
void share_set(struct wbg_share *s, unsigned capacity, unsigned per_tenant);
/* Whether one more entry fits: WBG_SHARE_TAKEN (and *ret_pooled says
 * whether it came from the pool), or why not (counted). tenant: whether
 * the entry has one; held: what that tenant holds now. */
enum wbg_share_refusal share_take(struct wbg_share *s, bool tenant, unsigned held, bool *ret_pooled);
void share_give(struct wbg_share *s, bool pooled);
const char *share_refusal_to_string(enum wbg_share_refusal r);
/* `name{reason="REASON"} N` for each refusal whose REASON (the table's own
 * word for it) is given; the family's HELP and TYPE are the caller's. */
void share_metrics(FILE *f, const struct wbg_share *s, const char *name,
		   const char *const reasons[_WBG_SHARE_REFUSAL_MAX]);
