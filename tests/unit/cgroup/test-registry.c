/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The registry's indexes: by unit name (systemd's job news) and the count
 * of tracked children (a pod's handover asking whether its containers'
 * cgroups are still there), kept through adds and removals in any order. */
#include <stdio.h>
#include <string.h>

#include "registry.h"
#include "tap.h"

static unsigned count_unit(const struct wbg_registry *r, const char *unit)
{
	unsigned n = 0;

	for (const struct wbg_cgroup *c = registry_find_unit(r, unit); c; c = c->unit_next)
		n += strcmp(c->ident.unit, unit) == 0;
	return n;
}

int main(void)
{
	struct wbg_registry r = { 0 };
	struct wbg_cgroup *sys = NULL, *a = NULL, *ua = NULL, *b = NULL, *c = NULL;
	char p[128];

	CHECK(registry_add(&r, 1, "", &c) == 0 && registry_add(&r, 2, "system.slice", &sys) == 0 &&
		      registry_add(&r, 3, "system.slice/a.service", &a) == 0 &&
		      registry_add(&r, 4, "user.slice", &c) == 0 &&
		      registry_add(&r, 5, "user.slice/user-1000.slice", &c) == 0 &&
		      registry_add(&r, 6, "user.slice/user-1000.slice/user@1000.service", &c) == 0 &&
		      registry_add(&r, 7, "user.slice/user-1000.slice/user@1000.service/a.service", &ua) == 0,
	      "a tree with a system unit and a user's unit of the same name");
	if (!a || !ua)
		return tap_done();
	CHECK(count_unit(&r, "a.service") == 2 && count_unit(&r, "b.service") == 0,
	      "by unit: both a.service cgroups, no b.service");
	CHECK(registry_has_children(&r, "system.slice") && !registry_has_children(&r, "system.slice/a.service") &&
		      registry_has_children(&r, "") && !registry_has_children(&r, "nowhere"),
	      "children: system.slice has one, a.service none, the root some, an unknown path none");
	registry_remove(&r, a);
	CHECK(count_unit(&r, "a.service") == 1 && registry_find_unit(&r, "a.service") == ua,
	      "the first one removed: the other is found");
	CHECK(!registry_has_children(&r, "system.slice"), "system.slice has no children left");
	{
		int added = 0;

		for (int i = 0; i < 100; i++) {
			snprintf(p, sizeof(p), "system.slice/b%d.service", i);
			added += registry_add(&r, 100 + i, p, &b) == 0;
		}
		CHECK(added == 100, "100 more units added");
	}
	CHECK(registry_add(&r, 300, "system.slice/b50.service/b.service", &b) == 0 && count_unit(&r, "b.service") == 1 &&
		      count_unit(&r, "b50.service") == 1 && registry_has_children(&r, "system.slice/b50.service"),
	      "100 more units: each found by its name, a nested one too");
	registry_remove(&r, registry_find_path(&r, "system.slice/b50.service/b.service"));
	CHECK(!registry_has_children(&r, "system.slice/b50.service") && count_unit(&r, "b.service") == 0,
	      "the nested one removed: gone from both indexes");
	registry_remove(&r, ua);
	CHECK(count_unit(&r, "a.service") == 0 && r.n == 105, "the last a.service removed: none (%zu tracked)", r.n);
	registry_free(&r);
	return tap_done();
}
