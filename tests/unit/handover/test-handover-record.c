/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One handover's record (handover.h): what its jobs' results add up to, as
 * handovers.jsonl and the journal carry it, the JSON parsed. */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "handover.h"
#include "tap.h"
#include "wbg-flush.h"
#include "wbg-runtime.h"

/* The record's integer field key, or -1 when it is absent. */
static int64_t field(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int) ? json_object_get_int64(v)
												     : -1;
}

/* handover_conclude(): each cause's rule, from a handover with nothing
 * concluded and from one whose outcome is settled. */
static void test_conclude(void)
{
	static const struct {
		enum wbg_cause cause;
		enum wbg_outcome before;
		unsigned n_failed;
		enum wbg_outcome after;
		const char *reason; /* "=": the reason before, kept */
	} rows[] = {
		{ WBG_CAUSE_MITIGATION_OFF, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_DISABLED, "mitigation off" },
		{ WBG_CAUSE_TIMEOUT, WBG_OUTCOME_FAILED, 1, WBG_OUTCOME_TIMEOUT, "flush timeout" },
		{ WBG_CAUSE_STOPPED_FLUSHING, WBG_OUTCOME_TIMEOUT, 0, WBG_OUTCOME_INTERRUPTED,
		  "daemon stopped during the flush" },
		{ WBG_CAUSE_STOPPED_WATCHED, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_INTERRUPTED,
		  "daemon stopped while its dying wb was watched" },
		{ WBG_CAUSE_STOPPED_WATCHED, WBG_OUTCOME_DRAINED, 0, WBG_OUTCOME_DRAINED, "=" },
		{ WBG_CAUSE_FLUSHES_DONE, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_FLUSHED, "=" },
		{ WBG_CAUSE_FLUSHES_DONE, WBG_OUTCOME_PENDING, 2, WBG_OUTCOME_FAILED, "=" },
		{ WBG_CAUSE_FLUSHES_DONE, WBG_OUTCOME_TIMEOUT, 0, WBG_OUTCOME_TIMEOUT, "=" },
		{ WBG_CAUSE_WATCH_FLUSHED, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_FLUSHED, NULL },
		{ WBG_CAUSE_WATCH_AGED_FLUSHED, WBG_OUTCOME_PENDING, 1, WBG_OUTCOME_FAILED,
		  "not drained at watch_max_age_sec: flushed" },
		{ WBG_CAUSE_WATCH_DRAINED, WBG_OUTCOME_FAILED, 0, WBG_OUTCOME_FAILED, "=" },
		{ WBG_CAUSE_ENDED_CLEAN, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_CLEAN, "=" },
		{ WBG_CAUSE_REPOPULATED, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_PENDING, "repopulated before removal" },
		{ WBG_CAUSE_JOB_TIMED_OUT, WBG_OUTCOME_PENDING, 1, WBG_OUTCOME_PENDING, "a target timed out" },
		{ WBG_CAUSE_INVALID_STEP, WBG_OUTCOME_PENDING, 0, WBG_OUTCOME_FAILED,
		  "lifecycle: an event its phase must not see (logged)" },
		{ WBG_CAUSE_INVALID_STEP, WBG_OUTCOME_CLEAN, 0, WBG_OUTCOME_CLEAN,
		  "lifecycle: an event its phase must not see (logged)" },
	};
	unsigned wrong = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct wbg_handover h = { .outcome = rows[i].before, .n_failed = rows[i].n_failed, .reason = "before" };
		bool keep = rows[i].reason && strcmp(rows[i].reason, "=") == 0;

		handover_conclude(&h, rows[i].cause);
		if (h.outcome != rows[i].after ||
		    (keep ? strcmp(h.reason, "before") != 0
			  : (rows[i].reason ? !h.reason || strcmp(h.reason, rows[i].reason) != 0 : h.reason != NULL))) {
			wrong++;
			printf("# row %zu: %s, %s\n", i, wbg_outcome_to_string(h.outcome), h.reason ? h.reason : "(none)");
		}
	}
	CHECK(wrong == 0, "conclude: %zu causes from a pending and a settled handover, each by its rule",
	      sizeof(rows) / sizeof(rows[0]));
	{
		struct wbg_handover h = { .outcome = WBG_OUTCOME_PENDING, .n_failed = 1 };

		CHECK(handover_outcome_now(&h) == WBG_OUTCOME_FAILED && h.outcome == WBG_OUTCOME_PENDING,
		      "the outcome now of a pending handover with a failed job: failed, nothing concluded");
	}
}

int main(void)
{
	struct wbg_handover *h = handover_new(7, 42, "k/pod", WBG_TRIGGER_REMOVED, 1000);
	struct flush_job j = { .kind = FLUSH_FS, .result = 0, .started_usec = 2000,
			       .stats = { .inodes_synced = 5, .inodes_gone = 3, .inodes_failed = 2, .inodes_skipped = 1 } };
	struct json_object *o;

	test_conclude();
	if (!h)
		return 1;
	o = handover_to_json(h, NULL);
	CHECK(o && field(o, "inodes_gone") == -1, "a record with no job names no inode that was gone");
	CHECK(o && field(o, "inodes_failed") == -1, "... and none that failed");
	json_object_put(o);
	handover_job_done(h, &j);
	handover_job_done(h, &j);
	o = handover_to_json(h, NULL);
	CHECK(field(o, "inodes_synced") == 10, "inodes written, summed over its jobs");
	CHECK(field(o, "inodes_gone") == 6, "inodes deleted since they were dirtied, summed");
	CHECK(field(o, "inodes_failed") == 4, "inodes that could not be written, summed");
	CHECK(field(o, "inodes_skipped") == 2, "special files never opened, summed");
	json_object_put(o);
	{
		/* a pod uid the path does not carry: the runtime's (NRI) */
		struct wbg_container_names nm = { "db", "shop", "app", "c1", "0c1d2e3f-aaaa-bbbb-cccc-123456789abc" };

		o = handover_to_json(h, &nm);
		CHECK(o && json_object_object_get_ex(o, "pod_uid", NULL) &&
			      strcmp(json_object_get_string(json_object_object_get(o, "pod_uid")),
				     "0c1d2e3f-aaaa-bbbb-cccc-123456789abc") == 0,
		      "pod_uid from NRI when the cgroup path has none");
		json_object_put(o);
	}
	handover_free(h);
	return tap_done();
}
