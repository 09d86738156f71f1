/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The API's callers in the handover lifecycle (lifecycle-waiters.c),
 * against the pretend world: FlushCgroup's callers wait for the flush and
 * are answered once, on its end, their timeout or the daemon's stop; the
 * waiters' table is bounded and shared between tenants; a closed
 * connection's callers go unanswered. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle-world.h"
#include "tap.h"

/* Caller i was answered once, with this outcome, and released. */
static bool answered(int i, const char *outcome)
{
	return world.replies[i] == 1 && strcmp(world.reply_outcome[i], outcome) == 0 && world.refs[i] == 0;
}

static void test_answered_once(void)
{
	struct wbg_cgroup *c;
	uint64_t id;

	setup(false);
	c = cgroup(600, "k/live");
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[1]) == 1,
	      "FlushCgroup on a live cgroup: an api handover");
	CHECK(world.replies[1] == 0 && lc.waiters.n == 1, "FlushCgroup on a live cgroup: its caller waits");
	CHECK(world.refs[1] == 1, "FlushCgroup on a live cgroup: its call is held while it waits");
	CHECK(lifecycle_flush_request(&lc, c, c->path, 5 * S, &world.calls[2]) == 1 && lc.waiters.n == 2,
	      "a second caller waits too");
	CHECK(world.n_sub == 1, "a second caller waits for the same flush");
	id = c->handover->id;
	job_done(id, 0);
	CHECK(answered(1, "flushed") && world.replies[2] == 1 && world.refs[2] == 0,
	      "the flush done: each caller answered once, flushed, and released");
	CHECK(world.reply_id[1] == id, "the answer names the handover's id");
	CHECK(lc.waiters.n == 0, "the flush done: nobody waits");
	CHECK(world.ended == 1 && world.last_trigger == WBG_TRIGGER_API, "an api handover of a live cgroup ends with its flush");
	CHECK(!c->handover, "an api handover that ended leaves the live cgroup");
	CHECK(lifecycle_flush_request(&lc, NULL, "k/live", 5 * S, &world.calls[3]) == 1 && world.replies[3] == 1,
	      "asked again for a cgroup no longer tracked: answered at once");
	CHECK(world.reply_id[3] == id, "asked again for a cgroup no longer tracked: from the recent records");
	CHECK(lifecycle_flush_request(&lc, NULL, "k/never", 5 * S, &world.calls[4]) == -ENOENT,
	      "a cgroup never seen: -ENOENT");
	CHECK(world.replies[4] == 0, "a cgroup never seen: no reply");
	teardown();
}

static void test_timeouts(void)
{
	struct wbg_cgroup *d;

	setup(false);
	d = cgroup(601, "k/slow");
	(void)lifecycle_flush_request(&lc, d, d->path, 2 * S, &world.calls[5]);
	(void)lifecycle_flush_request(&lc, d, d->path, 0, &world.calls[6]);
	CHECK(world.replies[6] == 1 && strcmp(world.reply_outcome[6], "pending") == 0, "timeout 0: answered pending at once");
	advance(world.now + 2 * S);
	CHECK(answered(5, "pending"), "the caller's timeout: answered pending once, released");
	job_done(d->handover->id, 0);
	CHECK(world.replies[5] == 1, "the flush that ends later answers nobody twice");
	teardown();
}

/* Bounded, and shared: one tenant's callers take at most its cap; the
 * others' still wait; 64 tenants' floors and the pool fill it. */
static void test_bounds(void)
{
	struct wbg_cgroup *d;
	unsigned refused = 0;
	int i = 10;

	setup(false);
	d = cgroup(602, "k/many");
	for (; i < 10 + WBG_FLUSH_WAITERS_MAX; i++)
		refused += lifecycle_flush_request(&lc, d, d->path, 60 * S, &world.calls[i]) == -EBUSY;
	CHECK(lc.waiters.n == WBG_FLUSH_WAITERS_PER_TENANT, "one tenant's %d callers: %d waited for (%u)",
	      WBG_FLUSH_WAITERS_MAX, WBG_FLUSH_WAITERS_PER_TENANT, lc.waiters.n);
	CHECK(refused == WBG_FLUSH_WAITERS_MAX - WBG_FLUSH_WAITERS_PER_TENANT, "one tenant's callers: the rest refused (-EBUSY)");
	CHECK(lc.waiters.share.refused[WBG_SHARE_TENANT] == refused, "one tenant's callers: its refusals counted");
	for (int t = 0; t < 80 && i < CALLS - 1; t++) {
		struct wbg_cgroup *e;
		char p[32];

		snprintf(p, sizeof(p), "t%d/c", t);
		e = cgroup(700 + t, p);
		for (int k = 0; k < 8 && i < CALLS - 1; k++, i++)
			(void)lifecycle_flush_request(&lc, e, e->path, 60 * S, &world.calls[i]);
	}
	CHECK(lc.waiters.n == WBG_FLUSH_WAITERS_MAX, "many tenants fill the table (%u)", lc.waiters.n);
	CHECK(lc.waiters.share.refused[WBG_SHARE_POOL] > 0, "many tenants: the pool's refusals counted");
	CHECK(lifecycle_flush_request(&lc, d, d->path, 60 * S, &world.calls[CALLS - 1]) == -EBUSY,
	      "the table full: the next caller gets -EBUSY");
	teardown();
	CHECK(answered(10, "pending"), "stopping answers every waiting caller once");
}

static bool even_call(void *call, const void *data)
{
	return call_index(call) % 2 == 0;
}

static void test_drop_waiters(void)
{
	struct wbg_cgroup *c;

	setup(false);
	c = cgroup(650, "k/dropped");
	for (int i = 20; i < 24; i++)
		(void)lifecycle_flush_request(&lc, c, c->path, 60 * S, &world.calls[i]);
	CHECK(lifecycle_drop_waiters(&lc, even_call, NULL) == 2, "a closed connection's callers go");
	CHECK(world.refs[20] == 0, "a closed connection's callers are released");
	CHECK(world.replies[20] == 0, "a closed connection's callers go unanswered");
	CHECK(lc.waiters.n == 2 && world.refs[21] == 1, "the others stay");
	job_done(c->handover->id, 0);
	CHECK(world.replies[20] == 0 && world.replies[21] == 1, "the flush's end answers only those left");
	teardown();
}

WORLD_MAIN(test_answered_once, test_timeouts, test_bounds, test_drop_waiters)
