/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configuration watch (config-watch.h) on a real sd-event loop and a
 * temporary directory laid out as the kubelet lays out a ConfigMap volume:
 * wbguard.conf -> ..data/wbguard.conf, ..data -> ..<timestamp>, updated by
 * renaming a new ..data over the old one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "config-watch.h"
#include "wbg-base.h"
#include "tap.h"
#include "test-files.h"

static char dir[] = "/tmp/wbg-config-watch-XXXXXX";
static unsigned changed;

static void on_changed(void *userdata)
{
	changed++;
}

static void put(const char *rel, const char *text)
{
	test_put(dir, rel, text);
}

static int run(sd_event *e, uint64_t usec)
{
	uint64_t end, now;

	sd_event_now(e, CLOCK_MONOTONIC, &now);
	end = now + usec;
	while (now < end) {
		if (sd_event_run(e, end - now) < 0)
			return -1;
		sd_event_now(e, CLOCK_MONOTONIC, &now);
	}
	return 0;
}

static void at(const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", dir, rel);
}

int main(void)
{
	struct wbg_config_watch w;
	_cleanup_(sd_event_unrefp) sd_event *e = NULL;
	char p[512], q[512];
	int r;

	if (!mkdtemp(dir) || sd_event_new(&e) < 0)
		return 1;
	/* the kubelet's layout */
	at("..2026_12_01_1", p, sizeof(p));
	mkdir(p, 0755);
	put("..2026_12_01_1/wbguard.conf", "[daemon]\nlog_level = info\n");
	at("..data", p, sizeof(p));
	(void)symlink("..2026_12_01_1", p);
	at("wbguard.conf", p, sizeof(p));
	(void)symlink("..data/wbguard.conf", p);

	CHECK(config_watch_start(&w, e, p, on_changed, NULL) == 0 && w.dir_source, "watching the ConfigMap's directory");
	run(e, 2 * WBG_CONFIG_SETTLE_USEC);
	CHECK(changed == 0 && w.events == 0, "nothing changed: no reload, no event");

	/* an update, as the kubelet does it */
	at("..2026_12_01_2", p, sizeof(p));
	mkdir(p, 0755);
	put("..2026_12_01_2/wbguard.conf", "[daemon]\nlog_level = debug\n");
	at("..data_tmp", p, sizeof(p));
	(void)symlink("..2026_12_01_2", p);
	at("..data", q, sizeof(q));
	if (rename(p, q) < 0)
		return 1;
	at("..2026_12_01_1/wbguard.conf", p, sizeof(p));
	unlink(p);
	at("..2026_12_01_1", p, sizeof(p));
	rmdir(p);
	run(e, 3 * WBG_CONFIG_SETTLE_USEC);
	CHECK(changed == 1 && w.events >= 2, "the ..data swap: one reload for its several events (%lu events)",
	      (unsigned long)w.events);

	/* a drop-in directory made later, and a drop-in in it */
	at("conf.d", p, sizeof(p));
	mkdir(p, 0755);
	run(e, 3 * WBG_CONFIG_SETTLE_USEC);
	put("conf.d/10-local.conf", "[flush]\nmode = eager\n");
	run(e, 3 * WBG_CONFIG_SETTLE_USEC);
	CHECK(w.dropins_source && changed == 3, "conf.d appearing, then a drop-in written in it: each reloads (%u)",
	      changed);
	at("conf.d/10-local.conf", p, sizeof(p));
	unlink(p);
	run(e, 3 * WBG_CONFIG_SETTLE_USEC);
	CHECK(changed == 4, "a drop-in removed: reloaded");
	put("wbguard-other", "x"); /* not the configuration's */
	put("conf.d/README", "x");
	run(e, 2 * WBG_CONFIG_SETTLE_USEC);
	CHECK(changed == 4, "other files in its directory or conf.d: no reload");
	config_watch_stop(&w);
	put("wbguard-other", "x");
	run(e, 2 * WBG_CONFIG_SETTLE_USEC);
	CHECK(changed == 4, "stopped: no more reloads");

	/* leaves first: remove() takes files and emptied directories */
	static const char *const made[] = { "conf.d/README", "conf.d", "wbguard-other", "..2026_12_01_2/wbguard.conf",
					    "..2026_12_01_2", "..data", "wbguard.conf" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		at(made[i], p, sizeof(p));
		remove(p);
	}
	rmdir(dir);

	/* no configuration directory (a build's default prefix, nothing
	 * installed): said at info, not warned of at every start */
	{
		char log[] = "/tmp/wbg-config-watch-log-XXXXXX";
		int fd = mkstemp(log), saved = dup(STDERR_FILENO);
		struct stat st;

		log_set_max_level(LOG_NOTICE);
		dup2(fd, STDERR_FILENO);
		r = config_watch_start(&w, e, "/nonexistent/wbguard/wbguard.conf", on_changed, NULL);
		dup2(saved, STDERR_FILENO);
		close(saved);
		CHECK(r == 0 && fstat(fd, &st) == 0 && st.st_size == 0,
		      "no configuration directory: started, no warning (%lld bytes logged)", (long long)st.st_size);
		config_watch_stop(&w);
		close(fd);
		unlink(log);
	}
	return tap_done();
}
