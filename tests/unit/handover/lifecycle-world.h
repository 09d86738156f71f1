/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pretend world the handover lifecycle (lifecycle.h) runs in for the
 * unit tests: a clock the test moves, a pool whose jobs end when the test
 * says, memory.stat and wb_stats as the test sets them, and the records,
 * replies, armings and state dir calls it sees. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <json-c/json.h>

#include "lifecycle.h"
#include "wbg-base.h"

#define MS 1000ULL
#define S (1000ULL * 1000)
#define CALLS 1024

struct submitted {
	uint64_t id;     /* the handover's */
	uint64_t waiter; /* ... with its flush round (handover_waiter()) */
	enum flush_purpose purpose;
	dev_t dev;
	size_t n_inodes;
	uint64_t first_ino;
};

struct world {
	uint64_t now, scheduled;
	/* what the pretend planner returns */
	unsigned plan_targets, mount_targets, recorded_targets;
	int plan_result;
	bool own_set_missing, set_maybe_evicted;
	unsigned n_excluded;
	bool last_plan_inodes;
	bool plan_uses_inodes; /* targets by inode (sets complete), with none listed */
	int submit_result;
	struct submitted sub[64];
	unsigned n_sub;
	unsigned timed_out;
	uint64_t dirty, writeback;
	int dirty_result;
	bool children;
	unsigned cleanups;
	int cleanup_result;
	uint64_t wb_dirty[8];
	size_t n_wb_dirty;
	uint64_t wb_listed[8]; /* clean wbs still listed: inodes attached */
	size_t n_wb_listed;
	bool no_wbstats; /* before 6.10: census cannot say */
	unsigned armed, disarmed, forgotten;
	uint64_t last_armed;
	bool last_arm_stall_only;
	unsigned pending_saves, pending_drops;
	/* what plan_recorded was asked to plan, call by call: a record's
	 * devices are what a recovered handover flushes */
	struct {
		dev_t devs[8];
		bool bdev[8];
		size_t n;
	} recorded[16];
	unsigned n_recorded;
	/* the records */
	unsigned ended;
	char last_json[4096];
	const struct wbg_handover *last_h; /* valid inside ended only */
	enum wbg_outcome last_outcome;
	enum wbg_trigger last_trigger;
	const char *last_reason;
	bool last_not_own;
	/* the API's callers: a call is its index in calls */
	int calls[CALLS];
	unsigned replies[CALLS], refs[CALLS];
	char reply_outcome[CALLS][32];
	uint64_t reply_id[CALLS];
};


/* The one world of a test binary: setup() resets it for each test. */
extern struct world world;
extern const struct wbg_lifecycle_world ops;
extern struct wbg_registry reg;
extern struct wbg_containers containers;
extern struct wbg_lifecycle lc;
extern char dir[];

void reset_world(void);
void setup(bool on_evidence);
void teardown(void);
struct wbg_cgroup *cgroup(uint64_t id, const char *path);
/* The pool finishes every job submitted for handover id. */
void job_done(uint64_t id, int result);
/* ... a job of a given waiter (handover_waiter(): a round's) */
void job_done_waiter(uint64_t waiter, int result);
/* The timer fires at every deadline up to t. */
void advance(uint64_t t);
void removed(struct wbg_cgroup *c);
/* The cgroup's dying wb keeps dirty pages: wb_stats lists it, until the
 * test empties world.n_wb_dirty. */
void dying_wb_dirty(uint64_t cgroup_id);
/* A cgroup emptied and removed (dirty, on-evidence: watched): its handover. */
struct wbg_handover *watched(uint64_t id, const char *path);
/* n handovers recorded so far, the last with this outcome. */
bool world_recorded(unsigned n, enum wbg_outcome outcome);
/* The last handover's record (world.last_json), read as its readers read
 * JSON: parsed, one top-level field at a time, so that a check names one
 * field and cannot match another field's text. */
bool world_json_has(const char *key);
/* 1 or 0; -1 when the field is absent or no boolean. */
int world_json_bool(const char *key);
/* Its value; -1 when absent or no integer (the record's are counts). */
int64_t world_json_int(const char *key);
/* a seconds field (-1: absent) */
double world_json_double(const char *key);
/* The field is a string, and this one. */
bool world_json_string_is(const char *key, const char *value);
/* A call's index in world.calls. */
int call_index(void *call);
/* The state dir and the container table, once per test binary. */
int world_open(void);
void world_close(void);

/* A lifecycle test binary's main: the world opened once, each test run in
 * turn (each sets up and tears down its own), then TAP's plan. */
#define WORLD_MAIN(...)                                                         \
	int main(void)                                                          \
	{                                                                       \
		void (*const tests_[])(void) = { __VA_ARGS__ };                 \
		if (world_open() < 0)                                           \
			return 1;                                               \
		for (size_t i_ = 0; i_ < ELEMENTSOF(tests_); i_++)              \
			tests_[i_]();                                           \
		world_close();                                                  \
		return tap_done();                                              \
	}
