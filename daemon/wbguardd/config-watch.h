/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration's files watched for changes ([daemon] watch_config):
 * the directory holding the file and its conf.d drop-in directory. An
 * edit, a new or removed drop-in, or a Kubernetes ConfigMap update (the
 * kubelet writes a new timestamped directory and renames the "..data"
 * symlink over the old one) calls changed() once, after the directory has
 * been quiet for a moment, as SIGHUP would.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#define WBG_CONFIG_SETTLE_USEC (500 * 1000)

struct wbg_config_watch {
	sd_event *event;
	char *dir, *file, *dropins; /* the file's directory and name, conf.d */
	sd_event_source *dir_source, *dropins_source, *settle;
	void (*changed)(void *userdata);
	void *userdata;
	uint64_t events, changes;
};

/* config_path: the configuration file (its directory is watched, and
 * <dir>/conf.d once it exists). */
int config_watch_start(struct wbg_config_watch *w, sd_event *event, const char *config_path,
		       void (*changed)(void *userdata), void *userdata);
void config_watch_stop(struct wbg_config_watch *w);
