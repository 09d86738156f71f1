/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-pod expiry and the boost (expiry.h) against a pretend world: a clock
 * the test moves, cgroups and their containers' annotations as the test
 * says, BPF armings, the pool's writeback rounds, and a real sysctl file in
 * a temporary tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wbg-config.h"
#include "expiry.h"
#include "wbg-flush.h"
#include "wbg-handover.h"
#include "wbg-base.h"
#include "tap.h"

#define MS 1000ULL
#define S (1000ULL * 1000)

static struct {
	uint64_t now, scheduled;
	struct {
		uint64_t id;
		const char *path, *annotation;
		bool container;
	} cg[8];
	unsigned n_cg;
	bool runtimes;
	unsigned armed[8], forgotten, writebacks[8], lookups;
	uint64_t dirty;
	bool fallback;
	char sysctl_file[300];
} x;

static uint64_t f_now(void *u)
{
	return x.now;
}

static void f_schedule(void *u, uint64_t usec)
{
	x.scheduled = usec;
}

static int f_lookup(void *u, uint64_t id, struct wbg_expiry_subject *ret)
{
	x.lookups++;
	for (unsigned i = 0; i < x.n_cg; i++) {
		if (x.cg[i].id != id)
			continue;
		*ret = (struct wbg_expiry_subject){ .container = x.cg[i].container, .runtimes_present = x.runtimes };
		snprintf(ret->path, sizeof(ret->path), "%s", x.cg[i].path);
		if (x.cg[i].annotation) {
			ret->has_annotation = true;
			snprintf(ret->annotation, sizeof(ret->annotation), "%s", x.cg[i].annotation);
		}
		return 0;
	}
	return -ENOENT;
}

static int f_arm(void *u, uint64_t id)
{
	x.armed[id % 8]++;
	return 0;
}

static void f_forget(void *u, uint64_t id)
{
	x.forgotten++;
}

static int f_writeback(void *u, uint64_t id, const char *path)
{
	x.writebacks[id % 8]++;
	return 1;
}

static int f_read_dirty(void *u, const char *path, uint64_t *ret)
{
	*ret = x.dirty;
	return 0;
}

static bool f_fallback(void *u)
{
	return x.fallback;
}

static const struct wbg_expiry_ops ops = { f_now, f_schedule, f_lookup, f_arm, f_forget, f_writeback, f_read_dirty,
					   f_fallback };

static void advance(struct wbg_expiry *e, uint64_t t)
{
	while (x.scheduled && x.scheduled <= t) {
		x.now = x.scheduled;
		x.scheduled = 0;
		expiry_tick(e);
	}
	x.now = t;
}

static unsigned sysctl(void)
{
	unsigned v = 0;
	FILE *f = fopen(x.sysctl_file, "re");

	if (!f || fscanf(f, "%u", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

static void add(uint64_t id, const char *path, const char *annotation, bool container)
{
	x.cg[x.n_cg++] = (typeof(x.cg[0])){ id, path, annotation, container };
}

static void job_done(struct wbg_expiry *e, uint64_t id)
{
	struct flush_job *j = flush_job_new(1, FLUSH_FS, "ext4", "/mnt");

	flush_job_add_pod(j, id);
	expiry_job_done(e, j);
	flush_job_free(j);
}

/* Expiry's parameters from a configuration, as wbguardd makes them. */
static struct wbg_expiry_params expiry_params(const struct wbg_config *c)
{
	return (struct wbg_expiry_params){ .rules = config_expiry_rules(c), .boost_cs = c->boost_cs,
					   .boost_window_usec = c->boost_window_usec, .flush = c->flush };
}

static void expiry_start_with(struct wbg_expiry *e, const struct wbg_config *c)
{
	struct wbg_expiry_params p = expiry_params(c);

	expiry_start(e, &p, c->proc_sys, c->state_dir, &ops, NULL);
}

#define EXPIRY_CONF "[expiry]\nper_pod_min = 1s\nboost = 5s\nboost_window_sec = 60\n"

int main(void)
{
	char tmp[] = "/tmp/wbg-expiry.XXXXXX", cmd[600];
	struct wbg_config cfg;
	struct wbg_expiry e;
	FILE *f;

	log_set_max_level(LOG_EMERG);
	if (!mkdtemp(tmp))
		return 1;
	config_init(&cfg);
	snprintf(cfg.proc_sys, sizeof(cfg.proc_sys), "%s/sys", tmp);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/run", tmp);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/sys/vm %s/run", tmp, tmp);
	if (system(cmd) != 0)
		return 1;
	snprintf(x.sysctl_file, sizeof(x.sysctl_file), "%s/sys/vm/dirty_expire_centisecs", tmp);
	f = fopen(x.sysctl_file, "we");
	fputs("3000\n", f);
	fclose(f);
	if (config_parse_string(&cfg, "t",
				"[policy \"pods/*\"]\nallow_annotation = yes\n"
				"[policy \"glob/*\"]\ndirty_expire = 5s\nmechanism = global\n"
				EXPIRY_CONF) < 0)
		return 1;
	x.now = 1000 * S;

	/* per-pod: armed, a round one expiry after the first dirtying */
	expiry_start_with(&e, &cfg);
	add(1, "pods/a", "2s", true);
	expiry_cgroup_populated(&e, 1, true);
	CHECK(x.armed[1] == 1 && e.n_policies[WBG_EXPIRY_PER_POD] == 1 && x.scheduled == 0,
	      "a pod allowed its annotation (2s): per-pod, BPF armed, clean so no timer");
	expiry_dirty_event(&e, 1);
	CHECK(x.scheduled == x.now + 2 * S, "its first dirtying: due one expiry later");
	expiry_dirty_event(&e, 1);
	CHECK(x.scheduled == x.now + 2 * S, "more dirtying: the same round");
	advance(&e, x.now + 2 * S);
	CHECK(x.writebacks[1] == 1 && x.armed[1] == 2, "due: its own inodes written back, re-armed first");
	expiry_dirty_event(&e, 1);
	job_done(&e, 1);
	CHECK(e.writebacks == 1 && x.scheduled == x.now + 2 * S,
	      "dirtied again while its round ran: the next round one expiry after it ends");
	advance(&e, x.now + 2 * S);
	x.dirty = 0;
	job_done(&e, 1);
	CHECK(x.writebacks[1] == 2 && x.scheduled == 0, "clean after that: no timer until BPF says otherwise");

	/* several pods' timers fire in their order, whatever the order armed */
	add(2, "pods/b", "5s", true);
	add(3, "pods/c", "1s", true);
	expiry_cgroup_populated(&e, 2, true);
	expiry_cgroup_populated(&e, 3, true);
	expiry_dirty_event(&e, 2);
	expiry_dirty_event(&e, 1);
	expiry_dirty_event(&e, 3);
	advance(&e, x.now + 1 * S);
	CHECK(x.writebacks[3] == 1 && x.writebacks[1] == 2 && x.writebacks[2] == 0, "1 s: only the 1 s pod");
	advance(&e, x.now + 1 * S);
	CHECK(x.writebacks[1] == 3 && x.writebacks[2] == 0, "2 s: the 2 s pod");
	expiry_cgroup_gone(&e, 2);
	advance(&e, x.now + 10 * S);
	CHECK(x.writebacks[2] == 0 && x.forgotten == 1 && e.n_policies[WBG_EXPIRY_PER_POD] == 2,
	      "a pod gone before its round: its timer goes with it, BPF forgets it");

	/* global: held while live */
	add(4, "glob/d", NULL, false);
	expiry_cgroup_populated(&e, 4, true);
	CHECK(sysctl() == 500 && e.n_policies[WBG_EXPIRY_GLOBAL] == 1, "a global policy holds the sysctl at 5 s");
	advance(&e, x.now + EXPIRY_SYSCTL_CHECK_USEC);
	CHECK(x.scheduled == x.now + EXPIRY_SYSCTL_CHECK_USEC, "while lowered, the admin's changes are looked for");
	expiry_cgroup_emptied(&e, 4);
	CHECK(sysctl() == 3000, "emptied: released, the admin's value back");
	expiry_cgroup_populated(&e, 4, true);
	CHECK(sysctl() == 500, "in use again: held again");
	{
		/* a reload (the configuration replaced in place, as the
		 * manager does): the policy changed, then removed */
		static const char *const texts[] = {
			"[policy \"glob/*\"]\ndirty_expire = 2s\nmechanism = global\n" EXPIRY_CONF,
			"[policy \"pods/*\"]\nallow_annotation = yes\n" EXPIRY_CONF,
		};
		unsigned want[] = { 200, 3000 };

		for (int i = 0; i < 2; i++) {
			struct wbg_config c2;
			struct wbg_expiry_params params;

			config_init(&c2);
			snprintf(c2.proc_sys, sizeof(c2.proc_sys), "%s", cfg.proc_sys);
			snprintf(c2.state_dir, sizeof(c2.state_dir), "%s", cfg.state_dir);
			if (config_parse_string(&c2, "t", texts[i]) < 0)
				return 1;
			config_done(&cfg);
			cfg = c2;
			params = expiry_params(&cfg);
			expiry_reload(&e, &params);
			CHECK(sysctl() == want[i] && e.n_policies[WBG_EXPIRY_GLOBAL] == (i == 0),
			      "reloaded with the global policy %s: the sysctl at %u (%u)", i ? "removed" : "at 2 s", want[i],
			      sysctl());
		}
	}
	expiry_cgroup_gone(&e, 4);
	CHECK(sysctl() == 3000 && e.n_policies[WBG_EXPIRY_GLOBAL] == 0, "gone: released");

	/* a runtime's state may come after the cgroup: looked up again */
	x.runtimes = true;
	add(5, "other/e", NULL, false);
	x.lookups = 0;
	expiry_cgroup_populated(&e, 5, true);
	advance(&e, x.now + 10 * S);
	CHECK(x.lookups == 1 + EXPIRY_RESOLVE_RETRIES, "no container yet, a runtime present: looked up %u more times",
	      EXPIRY_RESOLVE_RETRIES);
	x.runtimes = false;
	add(6, "other/f", NULL, false);
	x.lookups = 0;
	expiry_cgroup_populated(&e, 6, true);
	advance(&e, x.now + 10 * S);
	CHECK(x.lookups == 1, "no runtime on this host: looked up once");
	expiry_cgroup_populated(&e, 7, true);
	CHECK(x.lookups == 2 && x.scheduled == 0, "a cgroup not tracked: nothing kept");

	/* the boost */
	{
		struct wbg_handover h = { .id = 9, .path = "pods/z", .outcome = WBG_OUTCOME_TIMEOUT, .tenant = 77 };

		expiry_handover_ended(&e, &h);
		CHECK(sysctl() == 500 && e.boosts == 1, "a timed-out flush of its own data: boosted");
		advance(&e, x.now + 59 * S);
		CHECK(sysctl() == 500, "within the window");
		advance(&e, x.now + 2 * S);
		CHECK(sysctl() == 3000, "the window over: the admin's value back");
		expiry_handover_ended(&e, &h);
		expiry_handover_ended(&e, &h);
		expiry_handover_ended(&e, &h);
		CHECK(e.boosts == 3 && e.boost_limit.refused == 1, "the same tenant's fourth within 20 minutes: refused");
		h.outcome = WBG_OUTCOME_FLUSHED;
		h.verify = 0;
		h.tenant = 78;
		expiry_handover_ended(&e, &h);
		CHECK(e.boosts == 3, "flushed, its dying wb dirtied again by a live cgroup: no boost");
		h.outcome = WBG_OUTCOME_FAILED;
		x.fallback = true;
		expiry_handover_ended(&e, &h);
		CHECK(e.boosts == 3, "the kernel has the fallback: no boost");
	}
	expiry_stop(&e);
	CHECK(sysctl() == 3000, "stopped: the admin's value");
	config_done(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	(void)system(cmd);
	return tap_done();
}
