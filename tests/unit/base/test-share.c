/* SPDX-License-Identifier: GPL-2.0-or-later */
/* share.h: a tenant below its floor is refused only by a full table; above
 * it, by its cap or the pool; a give puts an entry back where it came from. */
#include "share.h"
#include "tap.h"

int main(void)
{
	struct wbg_share s = { 0 };
	bool pooled = false;
	unsigned a = 0, b = 0;
	uint64_t capped;

	share_set(&s, 1280, 100);
	CHECK(s.floor == 10 && s.pool == 640, "1,280: floors of 10 for 64 tenants, a pool of 640 (%u, %u)", s.floor,
	      s.pool);
	while (share_take(&s, true, a, &pooled) == WBG_SHARE_TAKEN)
		a++;
	CHECK(a == 100 && s.pooled == 90 && s.refused[WBG_SHARE_TENANT] == 1, "one tenant: its cap of 100, 90 pooled");
	for (int t = 0; t < 7; t++)
		for (unsigned held = 0; share_take(&s, true, held, &pooled) == WBG_SHARE_TAKEN;)
			held++;
	CHECK(s.pooled == 640 && s.refused[WBG_SHARE_POOL] >= 1, "eight tenants empty the pool (%u pooled)", s.pooled);
	while (b < s.floor && share_take(&s, true, b, &pooled) == WBG_SHARE_TAKEN)
		b++;
	CHECK(b == s.floor && !pooled, "an eighth still takes its floor (%u), none of it pooled", b);
	CHECK(share_take(&s, true, b, &pooled) == WBG_SHARE_POOL, "and no more: the pool is taken");
	share_give(&s, true);
	CHECK(share_take(&s, true, b, &pooled) == WBG_SHARE_TAKEN && pooled, "a pooled give lets one more in, pooled");
	CHECK(share_take(&s, false, 0, &pooled) == WBG_SHARE_TAKEN && !pooled,
	      "an entry of no tenant counts against the table alone");
	capped = s.refused[WBG_SHARE_TENANT];
	share_set(&s, s.used, 100);
	CHECK(share_take(&s, true, 0, &pooled) == WBG_SHARE_FULL && s.refused[WBG_SHARE_FULL] == 1,
	      "a full table refuses even a floor, counted");
	CHECK(s.used > 0 && s.refused[WBG_SHARE_TENANT] == capped, "share_set keeps what is held and counted");
	share_set(&s, 0, 0);
	CHECK(share_take(&s, true, 1u << 30, &pooled) == WBG_SHARE_TAKEN, "no bounds: taken");
	share_set(&s, 10, 0);
	CHECK(s.floor == 1 && s.floor_tenants == 5 && s.pool == 5,
	      "a table of 10: floors of 1 for 5 tenants, a pool of 5 (%u, %u, %u)", s.floor, s.floor_tenants, s.pool);
	return tap_done();
}
