/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host as the flushes need it: the mount table (ours, or PID 1's when
 * wbguardd runs in a container with host_root set), kept current through
 * the kernel's POLLPRI on mountinfo, and the block devices by number, kept
 * current through kernel uevents (libnl). Host paths (/dev, debugfs,
 * tracefs) are reached below host_root.
 */
#pragma once

#include <stdio.h>
#include <systemd/sd-event.h>

#include "wbg-kernel.h"

struct nl_sock;

struct wbg_host {
	char *root; /* "" or the host's root as seen from here (/proc/1/root) */
	struct wbg_mounts mounts;
	struct wbg_named_bdis named; /* btrfs' bdis, with the mount table */
	unsigned dropped_said;       /* named.dropped when last logged */
	struct blockdevs bdevs;
	int mountinfo_fd;
	struct nl_sock *uevent_sock;
	sd_event_source *mountinfo_source, *uevent_source;
};

/* Reads the mount table and the block devices and watches both; only the
 * first mount table read must succeed. */
int host_start(struct wbg_host *h, sd_event *event, const char *host_root);
void host_stop(struct wbg_host *h);
/* btrfs' bdis ("btrfs-N") to their filesystems' devices, as of the last
 * mount table. */
const struct wbg_named_bdis *host_named_bdis(const struct wbg_host *h);
void host_metrics(FILE *f, const struct wbg_host *h);
/* A host path (/dev, /sys/kernel/debug) as reachable from here. */
char *host_path(const struct wbg_host *h, const char *path);
