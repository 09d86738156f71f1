/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What wbguardd reads from the kernel: memory.stat and cgroup.events (keyed
 * files), mountinfo, debugfs wb_stats, uevents. The first byte picks which. */
#include "wbg-kernel.h"
#include "fuzz.h"
#include "wbg-base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *s = NULL;
	uint64_t v;

	if (size < 1)
		return 0;
	s = fuzz_string(data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 5) {
	case 0:
		(void)keyed_file_parse_u64(s, "file_dirty", &v);
		(void)keyed_file_parse_u64(s, "populated", &v);
		break;
	case 1: {
		struct wbg_mounts m;

		if (mountinfo_parse(s, &m) == 0) {
			(void)mountinfo_prefix(&m, "/proc/1/root");
			mountinfo_free(&m);
		}
		break;
	}
	case 2: {
		struct wbg_wb_stat *st = NULL;
		size_t n = 0;

		if (wbstats_parse(s, &st, &n) == 0)
			for (size_t i = 0; i < n; i++)
				(void)wb_stat_has_dirty_io(&st[i]);
		free(st);
		break;
	}
	case 3: {
		struct uevent u;

		/* a netlink datagram: NUL-separated, not NUL-terminated */
		(void)uevent_parse((const char *)data + 1, size - 1, &u);
		break;
	}
	default:
		(void)keyed_file_parse_u64(s, s, &v);
	}
	return 0;
}
