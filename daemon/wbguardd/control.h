/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket: peer-to-peer D-Bus on <state_dir>/control, for the OCI
 * hook and wbguardctl where there is no system bus (a container, early
 * boot). Root only: the socket is 0600 and each peer's SO_PEERCRED is
 * checked before a bus is made for it. Bounded: WBG_CONTROL_CONNS_MAX
 * connections, refusals counted. */
#pragma once

#include <limits.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define WBG_CONTROL_CONNS_MAX 64

struct wbg_control {
	sd_event *event;
	int fd;
	char path[PATH_MAX];
	sd_event_source *source;
	sd_bus *conns[WBG_CONTROL_CONNS_MAX];
	uint64_t refused;
	/* the API's objects on a new connection; a connection gone */
	int (*add_objects)(sd_bus *bus, void *userdata);
	void (*closed)(sd_bus *bus, void *userdata);
	void *userdata;
};

/* A socket that cannot be made is logged, and the daemon goes on. */
int control_start(struct wbg_control *c, sd_event *event, const char *state_dir,
		  int (*add_objects)(sd_bus *bus, void *userdata), void (*closed)(sd_bus *bus, void *userdata),
		  void *userdata);
void control_stop(struct wbg_control *c);
