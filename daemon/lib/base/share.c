/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "share.h"

#include <inttypes.h>

#include "macro.h"

void share_set(struct wbg_share *s, unsigned capacity, unsigned per_tenant)
{
	s->capacity = capacity;
	s->per_tenant = per_tenant;
	s->floor = s->pool = 0;
	if (!capacity)
		return;
	/* half the table in floors, for up to SHARE_FLOOR_TENANTS tenants
	 * (fewer, of one entry each, in a small table); the rest the pool */
	s->floor = capacity / (2 * SHARE_FLOOR_TENANTS);
	if (s->floor == 0)
		s->floor = 1;
	if (per_tenant && s->floor > per_tenant)
		s->floor = per_tenant;
	s->floor_tenants = capacity / 2 / s->floor;
	if (s->floor_tenants > SHARE_FLOOR_TENANTS)
		s->floor_tenants = SHARE_FLOOR_TENANTS;
	s->pool = capacity - s->floor * s->floor_tenants;
}

enum wbg_share_refusal share_take(struct wbg_share *s, bool tenant, unsigned held, bool *ret_pooled)
{
	enum wbg_share_refusal r = WBG_SHARE_TAKEN;
	bool pooled = false;

	if (s->capacity && s->used >= s->capacity)
		r = WBG_SHARE_FULL;
	else if (tenant && s->per_tenant && held >= s->per_tenant)
		r = WBG_SHARE_TENANT;
	else if (tenant && s->capacity && held >= s->floor) {
		pooled = true;
		if (s->pooled >= s->pool)
			r = WBG_SHARE_POOL;
	}
	if (r != WBG_SHARE_TAKEN) {
		s->refused[r]++;
		return r;
	}
	s->used++;
	s->pooled += pooled;
	*ret_pooled = pooled;
	return WBG_SHARE_TAKEN;
}

void share_give(struct wbg_share *s, bool pooled)
{
	if (s->used)
		s->used--;
	if (pooled && s->pooled)
		s->pooled--;
}

const char *share_refusal_to_string(enum wbg_share_refusal r)
{
	static const char *const names[_WBG_SHARE_REFUSAL_MAX] = {
		[WBG_SHARE_TAKEN] = "taken",
		[WBG_SHARE_FULL] = "full",
		[WBG_SHARE_TENANT] = "tenant_cap",
		[WBG_SHARE_POOL] = "pool",
	};

	return r < _WBG_SHARE_REFUSAL_MAX ? names[r] : "unknown";
}

void share_metrics(FILE *f, const struct wbg_share *s, const char *name,
		   const char *const reasons[_WBG_SHARE_REFUSAL_MAX])
{
	for (int r = WBG_SHARE_FULL; r < _WBG_SHARE_REFUSAL_MAX; r++)
		if (reasons[r])
			fprintf(f, "%s{reason=\"%s\"} %" PRIu64 "\n", name, reasons[r], s->refused[r]);
}
