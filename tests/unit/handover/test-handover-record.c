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

int main(void)
{
	struct wbg_handover *h = handover_new(7, 42, "k/pod", WBG_TRIGGER_REMOVED, 1000);
	struct flush_job j = { .kind = FLUSH_FS, .result = 0, .started_usec = 2000,
			       .stats = { .inodes_synced = 5, .inodes_gone = 3, .inodes_failed = 2, .inodes_skipped = 1 } };
	struct json_object *o;

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
