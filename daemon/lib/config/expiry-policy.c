/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "conf.h"
#include "expiry-policy.h"
#include "wbg-base.h"

int parse_expiry(const char *v, unsigned *ret_cs)
{
	static const struct {
		const char *unit;
		double cs;
	} units[] = { { "", 1 }, { "cs", 1 }, { "ms", 0.1 }, { "s", 100 }, { "m", 6000 }, { "h", 360000 } };
	char *end;
	double x;

	if (!v || !*v || *v == '-' || *v == '+' || *v == ' ')
		return -EINVAL;
	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || !isfinite(x))
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (strcmp(end, units[i].unit) == 0) {
			double cs = x * units[i].cs;

			if (cs < 1 || cs > WBG_EXPIRY_MAX_CS)
				return -ERANGE;
			*ret_cs = (unsigned)(cs + 0.5);
			return 0;
		}
	return -EINVAL;
}

int parse_expiry_mech(const char *v, enum wbg_expiry_mech *ret)
{
	if (strcmp(v, "per-pod") == 0)
		return *ret = WBG_EXPIRY_PER_POD, 0;
	if (strcmp(v, "global") == 0)
		return *ret = WBG_EXPIRY_GLOBAL, 0;
	return -EINVAL;
}

const char *wbg_expiry_mech_to_string(enum wbg_expiry_mech m)
{
	return m == WBG_EXPIRY_GLOBAL ? "global" : "per-pod";
}

/* Below a user's manager (user@UID.service/...), units are the user's own
 * to name: "foo.service" there is not the system's foo.service. */
static bool in_user_manager(const char *path)
{
	const char *at = strstr(path, "/user@");

	return at && strstr(at, ".service/") != NULL;
}

static const struct wbg_policy_rule *match_rule(const struct wbg_expiry_rules *c, const char *path, const char *unit)
{
	/* a unit name matches only for the system manager's units; a user's
	 * match by their path glob */
	bool by_unit = unit && *unit && !in_user_manager(path);

	for (size_t i = 0; i < c->n_policies; i++) {
		const struct wbg_policy_rule *r = &c->policies[i];

		if (fnmatch(r->match, path, 0) == 0 || (by_unit && fnmatch(r->match, unit, 0) == 0))
			return r;
	}
	return NULL;
}

int policy_resolve(const struct wbg_expiry_rules *c, const char *path, const char *unit, const char *annotation,
		   struct wbg_policy *ret, char *err, size_t errlen)
{
	const struct wbg_policy_rule *rule = match_rule(c, path, unit);
	struct wbg_policy p = { .mech = rule && rule->has_mech ? rule->mech : c->mech };

	if (errlen)
		err[0] = 0;
	if (annotation && !(rule && rule->allow_annotation))
		snprintf(err, errlen, "annotation %s = '%.64s' ignored: no [policy] matching %.256s allows annotations",
			 WBG_EXPIRY_ANNOTATION, annotation, path);
	else if (annotation) {
		if (parse_expiry(annotation, &p.expire_cs) == 0) {
			unsigned want = p.expire_cs;

			p.expire_cs = want < c->min_cs ? c->min_cs
				      : want > c->max_cs ? c->max_cs
								: want;
			if (p.expire_cs != want)
				snprintf(err, errlen, "annotation %s = '%.64s' is outside [expiry] min..max (%u..%u cs): %u cs",
					 WBG_EXPIRY_ANNOTATION, annotation, c->min_cs, c->max_cs,
					 p.expire_cs);
			snprintf(p.source, sizeof(p.source), "annotation %s", WBG_EXPIRY_ANNOTATION);
			goto done;
		}
		snprintf(err, errlen,
			 "annotation %s = '%.64s': expected centiseconds or a duration from 10ms to 24h (500, 250ms, 5s, 2m)",
			 WBG_EXPIRY_ANNOTATION, annotation);
	}
	if (rule && rule->expire_cs) {
		p.expire_cs = rule->expire_cs;
		snprintf(p.source, sizeof(p.source), "[policy \"%.128s\"]", rule->match);
		goto done;
	}
	if (c->default_cs) {
		p.expire_cs = c->default_cs;
		snprintf(p.source, sizeof(p.source), "[expiry] default");
		goto done;
	}
	return 0;
done:
	/* each per-pod expiry is a BPF map read and open_by_handle_at calls
	 * on the event loop: never more often than the floor */
	if (p.mech == WBG_EXPIRY_PER_POD && p.expire_cs < c->per_pod_min_cs)
		p.expire_cs = c->per_pod_min_cs;
	*ret = p;
	return 1;
}
