/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include "wbg-base.h"
#include "metrics.h"
#include "process-metrics.h"

#define REP3(x) x x x
#define REP21(x) REP3(REP3(x)) REP3(REP3(x)) REP3(x)

int process_stat_parse(const char *text, struct process_stat *ret)
{
	const char *p = strrchr(text, ')');
	unsigned long long v[21];
	char state;

	/* after the name: state (3), then fields 4..; we need 14, 15, 22, 23, 24 */
	if (!p || sscanf(p + 1, " %c" REP21(" %llu"), &state, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			 &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17], &v[18], &v[19],
			 &v[20]) != 22)
		return -EINVAL;
	/* v[0] is field 4 */
	*ret = (struct process_stat){ .utime_ticks = v[10], .stime_ticks = v[11], .start_ticks = v[18],
				      .vsize_bytes = v[19], .rss_pages = v[20] };
	return 0;
}

static int boot_time(const char *proc, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[256];
	const char *b;

	snprintf(path, sizeof(path), "%s/stat", proc);
	if (read_small_file_at(AT_FDCWD, path, 1 << 20, &text) < 0 || !(b = strstr(text, "\nbtime ")))
		return -ENOENT;
	return sscanf(b + 7, "%" SCNu64, ret) == 1 ? 0 : -EINVAL;
}

static long open_fds(const char *proc)
{
	char path[256];
	DIR *d;
	struct dirent *de;
	long n = 0;

	snprintf(path, sizeof(path), "%s/self/fd", proc);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the one this walk has open */
}

void build_info_metric(FILE *f, const char *version)
{
	struct utsname u;

	metric_family(f, "wbguard_build_info", "gauge", "1, with wbguardd's version and the running kernel's release.");
	fputs("wbguard_build_info{version=\"", f);
	metric_label_value(f, version);
	fputs("\",kernel_release=\"", f);
	metric_label_value(f, uname(&u) == 0 ? u.release : "");
	fputs("\"} 1\n", f);
}

void process_metrics(FILE *f, const char *proc)
{
	_cleanup_free_ char *text = NULL;
	struct process_stat st;
	struct rlimit rl;
	char path[256];
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	uint64_t btime = 0;

	snprintf(path, sizeof(path), "%s/self/stat", proc);
	if (read_small_file_at(AT_FDCWD, path, 4096, &text) >= 0 && process_stat_parse(text, &st) >= 0 && tick > 0) {
		metric_value(f, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.",
			     (double)(st.utime_ticks + st.stime_ticks) / (double)tick);
		metric_value(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
			     (double)st.rss_pages * (double)page);
		metric_value(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
			     (double)st.vsize_bytes);
		if (boot_time(proc, &btime) >= 0)
			metric_value(f, "process_start_time_seconds", "gauge",
				     "Start time of the process since the epoch, in seconds.",
				     (double)btime + (double)st.start_ticks / (double)tick);
	}
	fds = open_fds(proc);
	if (fds >= 0)
		metric_value(f, "process_open_fds", "gauge", "Open file descriptors.", (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		metric_value(f, "process_max_fds", "gauge", "The limit of open file descriptors.", (double)rl.rlim_cur);
}
