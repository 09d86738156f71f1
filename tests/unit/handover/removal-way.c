/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The removal's way, call by call, for tools/removal-way: in the pretend
 * world, a tracked dirty cgroup in eager mode, flushed at its populated 0,
 * then removed. Every call the library makes for that one report (its
 * functions compiled with -finstrument-functions by the tool; this file is
 * not) is written out as "DEPTH OFFSET", the function's offset in this
 * executable, for addr2line. Exit 1 if the scenario did not reach the
 * removal (the way would be another one). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include "lifecycle-world.h"

#define NO_TRACE __attribute__((no_instrument_function))
#define MAX_CALLS 4096

/* per thread: only the test's own records (a pool thread would not) */
static _Thread_local bool tracing;
static _Thread_local int depth;
static struct {
	uintptr_t fn;
	int depth;
} calls[MAX_CALLS];
static size_t n_calls, lost;

NO_TRACE void __cyg_profile_func_enter(void *fn, void *site);
NO_TRACE void __cyg_profile_func_exit(void *fn, void *site);

NO_TRACE void __cyg_profile_func_enter(void *fn, void *site)
{
	if (tracing) {
		if (n_calls < MAX_CALLS)
			calls[n_calls++] = (typeof(calls[0])){ (uintptr_t)fn, depth };
		else
			lost++;
	}
	depth++;
}

NO_TRACE void __cyg_profile_func_exit(void *fn, void *site)
{
	depth--;
}

int main(void)
{
	struct wbg_cgroup *c;
	Dl_info self;
	uint64_t id;

	if (world_open() < 0 || !dladdr((void *)main, &self))
		return 1;
	setup(false);
	c = cgroup(100, "kubepods/a");
	id = lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	job_done(id, 0);
	if (!id || !c->handover || world.ended) {
		fprintf(stderr, "removal-way: the handover does not wait for the removal (id %llu)\n",
			(unsigned long long)id);
		return 1;
	}
	/* the report as the daemon's removal handler hands it over */
	c->removed = true;
	tracing = true;
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_REMOVED);
	tracing = false;
	for (size_t i = 0; i < n_calls; i++)
		printf("%d %#jx\n", calls[i].depth, (uintmax_t)(calls[i].fn - (uintptr_t)self.dli_fbase));
	if (lost)
		fprintf(stderr, "removal-way: %zu calls past the first %d not recorded\n", lost, MAX_CALLS);
	registry_remove(&reg, c);
	teardown();
	world_close();
	return lost ? 1 : 0;
}
