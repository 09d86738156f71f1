/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardctl's handover rows (ENDED, AGE, sizes in IEC units) from records
 * as wbguardd writes them, and verify's exit status per verdict. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>

#include "handover-table.h"
#include "verify.h"
#include "tap.h"

#define S 1000000ULL

static struct json_object *record(const char *text)
{
	return json_tokener_parse(text);
}

int main(void)
{
	struct handover_row row;
	struct json_object *j;
	char buf[16];
	/* 2026-12-06 12:00:00 UTC */
	time_t real = 1796558400;

	setenv("TZ", "UTC", 1);
	tzset();
	format_iec_bytes(0, buf, sizeof(buf));
	CHECK(strcmp(buf, "0 B") == 0, "0 bytes: %s", buf);
	format_iec_bytes(1023, buf, sizeof(buf));
	CHECK(strcmp(buf, "1023 B") == 0, "under a KiB in bytes: %s", buf);
	format_iec_bytes(4096, buf, sizeof(buf));
	CHECK(strcmp(buf, "4.0 KiB") == 0, "4096: %s", buf);
	format_iec_bytes(48ULL << 20, buf, sizeof(buf));
	CHECK(strcmp(buf, "48 MiB") == 0, "48 MiB: %s", buf);
	format_iec_bytes((3ULL << 30) + (512ULL << 20), buf, sizeof(buf));
	CHECK(strcmp(buf, "3.5 GiB") == 0, "3.5 GiB: %s", buf);
	format_iec_bytes(UINT64_MAX, buf, sizeof(buf));
	CHECK(strcmp(buf, "16 EiB") == 0, "the largest: %s", buf);
	format_age(42 * S, buf, sizeof(buf));
	CHECK(strcmp(buf, "42s") == 0, "42 s: %s", buf);
	format_age(184 * S, buf, sizeof(buf));
	CHECK(strcmp(buf, "3m04s") == 0, "184 s: %s", buf);
	format_age(7500 * S, buf, sizeof(buf));
	CHECK(strcmp(buf, "2h05m") == 0, "7500 s: %s", buf);
	format_age((3 * 86400 + 4 * 3600) * S, buf, sizeof(buf));
	CHECK(strcmp(buf, "3d04h") == 0, "3 days 4 hours: %s", buf);

	/* ended 100 s after the trigger at 1000 s; now is 1200 s */
	j = record("{\"id\":7,\"cgroup\":\"kubepods/pod1/c1\",\"trigger\":\"populated-0\",\"outcome\":\"flushed\","
		   "\"dirty_bytes\":52428800,\"device_bytes\":1048576,\"trigger_monotonic_us\":1000000000,"
		   "\"flushed_s\":0.5,\"ended_s\":100.0,\"pod\":\"web-0\",\"namespace\":\"shop\",\"container\":\"app\"}");
	CHECK(handover_row_make(j, 1200 * S, real, &row) == 0, "a record makes a row");
	CHECK(strcmp(row.age, "1m40s") == 0, "its age is now less its end: %s", row.age);
	CHECK(strcmp(row.ended, "2026-12-06 11:58:20") == 0, "it ended 100 s before now: %s", row.ended);
	CHECK(strcmp(row.dirty, "50 MiB") == 0 && strcmp(row.written, "1.0 MiB") == 0, "its sizes in IEC units: %s, %s",
	      row.dirty, row.written);
	CHECK(strcmp(row.who, "shop/web-0/app") == 0 && strcmp(row.cgroup, "/kubepods/pod1/c1") == 0,
	      "whose it was: %s %s", row.who, row.cgroup);
	CHECK(strcmp(row.id, "7") == 0 && strcmp(row.trigger, "populated-0") == 0 && strcmp(row.outcome, "flushed") == 0,
	      "its id, trigger and outcome as recorded");
	json_object_put(j);

	/* a record of an earlier boot: its end lies past this boot's now */
	j = record("{\"id\":8,\"cgroup\":\"a\",\"trigger\":\"removed\",\"outcome\":\"clean\",\"device_bytes\":0,"
		   "\"trigger_monotonic_us\":900000000000,\"ended_s\":1.0}");
	CHECK(handover_row_make(j, 1200 * S, real, &row) == 0 && strcmp(row.ended, "-") == 0 && strcmp(row.age, "-") == 0,
	      "another boot's record: no end or age (%s, %s)", row.ended, row.age);
	CHECK(strcmp(row.dirty, "-") == 0 && strcmp(row.written, "0 B") == 0 && strcmp(row.who, "-") == 0,
	      "no dirty count: '-'; nothing written: 0 B; not registered: '-'");
	json_object_put(j);

	/* an older wbguardd's record: no ended_s */
	j = record("{\"id\":9,\"cgroup\":\"b\",\"trigger_monotonic_us\":1000000}");
	CHECK(handover_row_make(j, 1200 * S, real, &row) == 0 && strcmp(row.ended, "-") == 0, "no ended_s: no end");
	json_object_put(j);
	j = record("{\"cgroup\":\"b\"}");
	CHECK(handover_row_make(j, 1200 * S, real, &row) == -EINVAL, "no id: no handover record");
	json_object_put(j);

	CHECK(verify_exit_status(0, WBG_VERDICT_ACTIVE) == 0, "verify: active is 0 (NPD's OK)");
	CHECK(verify_exit_status(0, WBG_VERDICT_MISSING) == 1, "verify: missing is 1 (NPD's NonOK)");
	CHECK(verify_exit_status(0, WBG_VERDICT_UNKNOWN) == VERIFY_EXIT_UNKNOWN && VERIFY_EXIT_UNKNOWN != 2,
	      "verify: unknown has its own code, not the usage error's 2");
	CHECK(verify_exit_status(-EINTR, WBG_VERDICT_ACTIVE) == VERIFY_EXIT_UNKNOWN, "verify: a probe that could not run cannot tell");
	return tap_done();
}
