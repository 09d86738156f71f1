/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#include "config-watch.h"
#include "wbg-base.h"
#include "timer-util.h"

#define MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_ONLYDIR)

static int on_settled(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_config_watch *w = userdata;

	w->changes++;
	w->changed(w->userdata);
	return 0;
}

static void watch_dropins(struct wbg_config_watch *w);

/* Only what the configuration is made of: the file itself, the
 * ConfigMap's own entries (..data and its timestamped directories), conf.d,
 * and a drop-in (*.conf). A directory like /tmp sees much else. */
static bool relevant(const struct wbg_config_watch *w, sd_event_source *s, const struct inotify_event *e)
{
	size_t n = e->len ? strlen(e->name) : 0;

	if (!n)
		return true; /* the directory itself */
	if (s == w->dropins_source)
		return n > 5 && strcmp(e->name + n - 5, ".conf") == 0;
	return strcmp(e->name, w->file) == 0 || strncmp(e->name, "..", 2) == 0 || strcmp(e->name, "conf.d") == 0;
}

static int on_event(sd_event_source *s, const struct inotify_event *e, void *userdata)
{
	struct wbg_config_watch *w = userdata;
	uint64_t now = 0;

	if (!(e->mask & IN_IGNORED) && !relevant(w, s, e))
		return 0;
	w->events++;
	if (e->mask & IN_IGNORED) {
		/* conf.d went away: looked for again with the next event */
		if (s == w->dropins_source)
			w->dropins_source = sd_event_source_disable_unref(w->dropins_source);
		return 0;
	}
	if (!w->dropins_source)
		watch_dropins(w); /* conf.d may just have appeared */
	/* a swap is several events in a row: one reload after them */
	(void)sd_event_now(w->event, CLOCK_MONOTONIC, &now);
	if (sd_event_source_set_time(w->settle, now + WBG_CONFIG_SETTLE_USEC) < 0 ||
	    sd_event_source_set_enabled(w->settle, SD_EVENT_ONESHOT) < 0)
		log_warning("Cannot arm the configuration reload: it waits for SIGHUP");
	return 0;
}

static void watch_dropins(struct wbg_config_watch *w)
{
	int r = sd_event_add_inotify(w->event, &w->dropins_source, w->dropins, MASK, on_event, w);

	if (r < 0 && r != -ENOENT)
		log_debug_errno(r, "Cannot watch %s", w->dropins);
}

int config_watch_start(struct wbg_config_watch *w, sd_event *event, const char *config_path,
		       void (*changed)(void *userdata), void *userdata)
{
	_cleanup_free_ char *copy = strdup(config_path);
	int r;

	*w = (struct wbg_config_watch){ .event = event, .changed = changed, .userdata = userdata };
	if (!copy)
		return log_oom();
	w->file = strdup(basename(copy));
	w->dir = strdup(dirname(copy));
	if (!w->dir || !w->file || asprintf(&w->dropins, "%s/conf.d", w->dir) < 0) {
		w->dropins = NULL;
		return log_oom();
	}
	r = timer_new_off(event, &w->settle, 100 * 1000, on_settled, w);
	if (r < 0)
		return log_error_errno(r, "Cannot add the configuration reload timer");
	r = sd_event_add_inotify(event, &w->dir_source, w->dir, MASK, on_event, w);
	if (r == -ENOENT) {
		/* a build's default path with nothing installed there: the
		 * defaults run, nothing is wrong */
		log_info("No %s: running on the defaults; a configuration made there later takes SIGHUP or a restart",
			 w->dir);
		return 0;
	}
	if (r < 0) {
		log_warning_errno(r, "Cannot watch %s: configuration changes wait for SIGHUP", w->dir);
		return 0;
	}
	watch_dropins(w);
	log_debug("Watching %s and %s for configuration changes", w->dir, w->dropins);
	return 0;
}

void config_watch_stop(struct wbg_config_watch *w)
{
	w->dir_source = sd_event_source_disable_unref(w->dir_source);
	w->dropins_source = sd_event_source_disable_unref(w->dropins_source);
	w->settle = sd_event_source_disable_unref(w->settle);
	free(w->dir);
	free(w->file);
	free(w->dropins);
	w->dir = w->file = w->dropins = NULL;
}
