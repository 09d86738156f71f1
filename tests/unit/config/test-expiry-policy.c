/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "conf.h"
#include "expiry-policy.h"
#include "wbg-base.h"
#include "tap.h"

/* policy_resolve() over c's rules, as they are now */
static int resolve(const struct wbg_config *c, const char *path, const char *unit, const char *annotation,
		   struct wbg_policy *ret, char *err, size_t errlen)
{
	struct wbg_expiry_rules r = config_expiry_rules(c);

	return policy_resolve(&r, path, unit, annotation, ret, err, errlen);
}

int main(void)
{
	struct wbg_config c;
	struct wbg_policy p;
	char err[256];
	unsigned cs = 0;

	log_set_max_level(LOG_EMERG);
	CHECK(parse_expiry("500", &cs) == 0 && cs == 500, "centiseconds");
	CHECK(parse_expiry("5s", &cs) == 0 && cs == 500, "seconds");
	CHECK(parse_expiry("1.5s", &cs) == 0 && cs == 150, "fractional seconds");
	CHECK(parse_expiry("250ms", &cs) == 0 && cs == 25, "milliseconds");
	CHECK(parse_expiry("2m", &cs) == 0 && cs == 12000, "minutes");
	CHECK(parse_expiry("30cs", &cs) == 0 && cs == 30, "explicit cs");
	CHECK(parse_expiry("0", &cs) == -ERANGE && parse_expiry("1ms", &cs) == -ERANGE &&
		      parse_expiry("25h", &cs) == -ERANGE && parse_expiry("1441m", &cs) == -ERANGE &&
		      parse_expiry("5d", &cs) == -EINVAL,
	      "zero, under 1 cs, over a day, unknown unit");
	CHECK(parse_expiry("24h", &cs) == 0 && cs == WBG_EXPIRY_MAX_CS, "hours");
	CHECK(parse_expiry("-5s", &cs) < 0 && parse_expiry("5 s", &cs) < 0 && parse_expiry("", &cs) < 0 &&
		      parse_expiry(" 5", &cs) < 0 && parse_expiry("nan", &cs) < 0 && parse_expiry("inf", &cs) < 0 &&
		      parse_expiry("1e9", &cs) < 0,
	      "negative, spaces, empty, nan, inf, huge rejected");

	config_init(&c);
	CHECK(resolve(&c, "kubepods.slice/x", NULL, NULL, &p, err, sizeof(err)) == 0,
	      "no policy anywhere: the kernel's expiry");
	CHECK(config_parse_string(&c, "t",
				  "[policy \"kubepods.slice/*besteffort*\"]\ndirty_expire = 5s\n"
				  "[policy \"batch-*.service\"]\ndirty_expire = 2s\nmechanism = global\n"
				  "[policy \"kubepods.slice/*\"]\nmechanism = global\n") == 0,
	      "policy sections parse");
	CHECK(c.n_policies == 3, "three rules, in file order");
	CHECK(resolve(&c, "kubepods.slice/kubepods-besteffort.slice/pod1/ctr", NULL, NULL, &p, err,
			     sizeof(err)) == 1 &&
		      p.expire_cs == 500 && p.mech == WBG_EXPIRY_PER_POD &&
		      strcmp(p.source, "[policy \"kubepods.slice/*besteffort*\"]") == 0,
	      "glob over the path; '*' crosses '/': %s", p.source);
	CHECK(resolve(&c, "system.slice/batch-1.service", "batch-1.service", NULL, &p, err, sizeof(err)) == 1 &&
		      p.expire_cs == 200 && p.mech == WBG_EXPIRY_GLOBAL,
	      "glob over the unit name, with its mechanism");
	CHECK(resolve(&c, "user.slice/user-1000.slice/user@1000.service/app.slice/batch-1.service",
			     "batch-1.service", NULL, &p, err, sizeof(err)) == 0,
	      "a user's unit named after a system unit does not get that unit's policy");
	/* A tenant's annotation: honoured only where the admin's policy opts
	 * in, and never outside [expiry] min..max. */
	CHECK(resolve(&c, "kubepods.slice/kubepods-besteffort.slice/pod1/ctr", NULL, "2s", &p, err,
			     sizeof(err)) == 1 &&
		      p.expire_cs == 500 && strstr(err, "ignored: no [policy] matching") &&
		      strcmp(p.source, "[policy \"kubepods.slice/*besteffort*\"]") == 0,
	      "an annotation no policy allows: ignored, said, the policy decides: %s", err);
	CHECK(resolve(&c, "system.slice/x", NULL, "1", &p, err, sizeof(err)) == 0 && err[0],
	      "an annotation with no policy at all cannot set the node's expiry to 1 cs");
	CHECK(config_parse_string(&c, "t", "[policy \"kubepods.slice/*besteffort*\"]\nallow_annotation = yes\n") == 0,
	      "allow_annotation parses");
	CHECK(resolve(&c, "kubepods.slice/kubepods-besteffort.slice/pod1/ctr", NULL, "7500ms", &p, err,
			     sizeof(err)) == 1 &&
		      p.expire_cs == 750 && strcmp(p.source, "annotation wbguard.io/dirty-expire") == 0 && !err[0],
	      "an allowed annotation wins");
	CHECK(resolve(&c, "kubepods.slice/kubepods-besteffort.slice/pod1/ctr", NULL, "fast", &p, err,
			     sizeof(err)) == 1 &&
		      p.expire_cs == 500 && strstr(err, "annotation wbguard.io/dirty-expire = 'fast': expected"),
	      "a bad annotation is reported and the config decides: %s", err);
	CHECK(config_parse_string(&c, "t", "[policy \"g/*\"]\nallow_annotation = yes\nmechanism = global\n"
					   "[expiry]\nmin = 2s\nmax = 1m\n") == 0 &&
		      resolve(&c, "g/pod", NULL, "10ms", &p, err, sizeof(err)) == 1 && p.expire_cs == 200 &&
		      p.mech == WBG_EXPIRY_GLOBAL && strstr(err, "outside [expiry] min..max"),
	      "global, '10ms': the admin's floor (2 s), not 1 cs on the whole node: %s", err);
	CHECK(resolve(&c, "g/pod", NULL, "1h", &p, err, sizeof(err)) == 1 && p.expire_cs == 6000,
	      "above the ceiling: the ceiling");
	CHECK(config_parse_string(&c, "t", "[expiry]\nmin = 10ms\nper_pod_min = 3s\n") == 0 &&
		      resolve(&c, "kubepods.slice/kubepods-besteffort.slice/pod1/ctr", NULL, "10ms", &p, err,
				     sizeof(err)) == 1 &&
		      p.expire_cs == 300 && p.mech == WBG_EXPIRY_PER_POD,
	      "per-pod never below per_pod_min, whatever the source (%u cs)", p.expire_cs);
	CHECK(resolve(&c, "kubepods.slice/kubepods-burstable.slice/pod2", NULL, NULL, &p, err, sizeof(err)) == 0,
	      "a rule with only a mechanism and no default: no policy");
	CHECK(config_parse_string(&c, "t", "[expiry]\ndefault = 10s\n") == 0 &&
		      resolve(&c, "kubepods.slice/kubepods-burstable.slice/pod2", NULL, NULL, &p, err,
				     sizeof(err)) == 1 &&
		      p.expire_cs == 1000 && p.mech == WBG_EXPIRY_GLOBAL && strcmp(p.source, "[expiry] default") == 0,
	      "the default, with the matching rule's mechanism");
	CHECK(config_parse_string(&c, "t", "[policy \"x\"]\ndirty_expire = soon\n") < 0 && c.n_policies == 4,
	      "a bad value is refused and nothing changes");
	CHECK(config_parse_string(&c, "t", "[policy x]\ndirty_expire = 5s\n") < 0, "an unquoted glob is refused");
	CHECK(config_parse_string(&c, "t", "[policy \"x\"]\nspeed = 5s\n") == 0 && c.unknown_keys == 1,
	      "an unknown key is ignored, counted");
	CHECK(config_parse_string(&c, "t", "[expiry]\nboost = off\nboost_window_sec = 10\n") == 0 && c.boost_cs == 0 &&
		      c.boost_window_usec == 10000000,
	      "boost off, window");
	config_done(&c);
	return tap_done();
}
