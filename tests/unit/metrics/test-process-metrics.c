/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/stat as process_stat_parse reads it, and the families the
 * exposition gets from this very process. */
#include <stdlib.h>
#include <string.h>

#include "process-metrics.h"
#include "tap.h"

int main(void)
{
	struct process_stat st;
	/* a name with spaces and a ')' of its own, as a tenant could name a process */
	const char *stat = "1234 (wb) guard (x)) S 1 1234 1234 0 -1 4194560 2318 0 0 0 75 31 0 0 20 0 5 0 "
			   "98765 23076864 5000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	CHECK(process_stat_parse(stat, &st) == 0 && st.utime_ticks == 75 && st.stime_ticks == 31 &&
		      st.start_ticks == 98765 && st.vsize_bytes == 23076864 && st.rss_pages == 5000,
	      "fields counted from the name's last ')'");
	CHECK(process_stat_parse("1234 (short) S 1 2", &st) < 0, "a short line is refused");
	CHECK(process_stat_parse("no parenthesis at all", &st) < 0, "no name: refused");
	f = open_memstream(&buf, &n);
	build_info_metric(f, "9.9.9");
	process_metrics(f, "/proc");
	fclose(f);
	CHECK(strstr(buf, "wbguard_build_info{version=\"9.9.9\",kernel_release=\""), "build_info with version and kernel");
	CHECK(strstr(buf, "\nprocess_cpu_seconds_total ") && strstr(buf, "\nprocess_resident_memory_bytes ") &&
		      strstr(buf, "\nprocess_start_time_seconds ") && strstr(buf, "\nprocess_open_fds ") &&
		      strstr(buf, "# TYPE process_cpu_seconds_total counter"),
	      "the standard process families, the CPU time a counter");
	free(buf);
	return tap_done();
}
