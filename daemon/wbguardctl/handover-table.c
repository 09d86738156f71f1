/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "handover-table.h"

void format_iec_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t i = 0;

	if (bytes < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && i + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		i++;
	}
	/* three significant digits at most, as ls -h and systemctl do */
	snprintf(buf, size, v < 10 ? "%.1f %s" : "%.0f %s", v, unit[i]);
}

void format_age(uint64_t usec, char *buf, size_t size)
{
	uint64_t s = usec / 1000000;

	if (s < 60)
		snprintf(buf, size, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, size, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s % 86400 / 3600);
}

static const char *field(struct json_object *rec, const char *key, const char *none)
{
	struct json_object *v;

	return json_object_object_get_ex(rec, key, &v) ? json_object_get_string(v) : none;
}

static void size_field(struct json_object *rec, const char *key, char *buf, size_t size)
{
	struct json_object *v;

	if (json_object_object_get_ex(rec, key, &v) && json_object_is_type(v, json_type_int))
		format_iec_bytes((uint64_t)json_object_get_int64(v), buf, size);
	else
		snprintf(buf, size, "-");
}

int handover_row_make(struct json_object *rec, uint64_t now_mono, time_t now_real, struct handover_row *ret)
{
	struct handover_row row = {};
	struct json_object *t, *e;
	const char *pod;

	if (!json_object_object_get_ex(rec, "id", NULL))
		return -EINVAL;
	snprintf(row.id, sizeof(row.id), "%s", field(rec, "id", "-"));
	snprintf(row.trigger, sizeof(row.trigger), "%s", field(rec, "trigger", "-"));
	snprintf(row.outcome, sizeof(row.outcome), "%s", field(rec, "outcome", "-"));
	size_field(rec, "dirty_bytes", row.dirty, sizeof(row.dirty));
	size_field(rec, "device_bytes", row.written, sizeof(row.written));
	snprintf(row.ended, sizeof(row.ended), "-");
	snprintf(row.age, sizeof(row.age), "-");
	/* a record of another boot (from the records file) has a monotonic
	 * time past this boot's now, or one we cannot place: "-" */
	if (json_object_object_get_ex(rec, "trigger_monotonic_us", &t) && json_object_object_get_ex(rec, "ended_s", &e)) {
		uint64_t end = (uint64_t)json_object_get_int64(t) + (uint64_t)(json_object_get_double(e) * 1e6);

		if (end <= now_mono) {
			time_t at = now_real - (time_t)((now_mono - end) / 1000000);
			struct tm tm;

			format_age(now_mono - end, row.age, sizeof(row.age));
			if (localtime_r(&at, &tm))
				strftime(row.ended, sizeof(row.ended), "%Y-%m-%d %H:%M:%S", &tm);
		}
	}
	/* whose cgroup, where the hook or NRI registered it */
	pod = field(rec, "pod", NULL);
	if (!pod)
		snprintf(row.who, sizeof(row.who), "-");
	else {
		const char *c = field(rec, "container", "");

		snprintf(row.who, sizeof(row.who), "%s/%s%s%s", field(rec, "namespace", ""), pod, *c ? "/" : "", c);
	}
	snprintf(row.cgroup, sizeof(row.cgroup), "/%s", field(rec, "cgroup", ""));
	*ret = row;
	return 0;
}
