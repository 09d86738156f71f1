/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket: peer-to-peer D-Bus on <state_dir>/control, for the OCI
 * hook and wbguardctl where there is no system bus (a container, early
 * boot). Root only: the socket is 0600 and each peer's SO_PEERCRED is
 * checked before a bus is made for it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "wbg-base.h"
#include "control.h"

static int on_conn_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_control *c = userdata;
	sd_bus *bus = sd_bus_message_get_bus(msg);

	/* a caller killed while it waited (a hook past its timeout) would
	 * hold its waiter slot until the flush ends */
	c->closed(bus, c->userdata);
	for (size_t i = 0; i < WBG_CONTROL_CONNS_MAX; i++)
		if (c->conns[i] == bus) {
			c->conns[i] = NULL;
			/* from a callback of its own: let sd-event drop it after */
			sd_bus_close_unref(bus);
			break;
		}
	return 0;
}

/* Takes fd: closed here on failure, by the bus once it has it. */
static int serve(struct wbg_control *c, int fd, size_t slot)
{
	_cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
	sd_id128_t id;
	int r;

	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_fd(bus, fd, fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	r = sd_id128_randomize(&id);
	if (r >= 0)
		r = sd_bus_set_server(bus, 1, id);
	if (r >= 0)
		r = sd_bus_negotiate_creds(bus, 1, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID);
	if (r >= 0)
		r = c->add_objects(bus, c->userdata);
	if (r >= 0)
		r = sd_bus_match_signal(bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
					"Disconnected", on_conn_disconnected, c);
	if (r >= 0)
		r = sd_bus_attach_event(bus, c->event, 0);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r < 0)
		return r;
	c->conns[slot] = TAKE_PTR(bus);
	return 0;
}

static int on_control(sd_event_source *s, int lfd, uint32_t revents, void *userdata)
{
	struct wbg_control *c = userdata;
	_cleanup_close_ int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	size_t slot;
	int r;

	if (fd < 0)
		return 0; /* EAGAIN, or the peer gave up: nothing to do */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0) {
		c->refused++;
		log_notice("Control socket: refused a connection from uid %d (pid %d): root only",
			   len == sizeof(cred) ? (int)cred.uid : -1, len == sizeof(cred) ? (int)cred.pid : -1);
		return 0;
	}
	for (slot = 0; slot < WBG_CONTROL_CONNS_MAX && c->conns[slot]; slot++)
		;
	if (slot == WBG_CONTROL_CONNS_MAX) {
		c->refused++;
		log_warning("Control socket: %d connections open already; refused pid %d", WBG_CONTROL_CONNS_MAX,
			    (int)cred.pid);
		return 0;
	}
	r = serve(c, TAKE_FD(fd), slot);
	if (r < 0) {
		if (r == -ENOMEM)
			return log_oom();
		log_warning_errno(r, "Control socket: cannot serve pid %d", (int)cred.pid);
	}
	return 0;
}

int control_start(struct wbg_control *c, sd_event *event, const char *state_dir,
		  int (*add_objects)(sd_bus *bus, void *userdata), void (*closed)(sd_bus *bus, void *userdata),
		  void *userdata)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -EBADF;
	int r;

	*c = (struct wbg_control){ .event = event, .fd = -EBADF, .add_objects = add_objects, .closed = closed,
				   .userdata = userdata };
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control", state_dir) >= sizeof(sa.sun_path))
		return log_error_errno(ENAMETOOLONG, "Control socket path %s/control is too long", state_dir);
	snprintf(c->path, sizeof(c->path), "%s", sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(errno, "Cannot make the control socket");
	(void)unlink(sa.sun_path); /* a previous run's */
	/* 0600 from the start, not after a window */
	{
		mode_t old = umask(0177);

		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (r < 0 || listen(fd, 64) < 0) {
		/* the daemon is useful without it: log, go on */
		log_warning_errno(errno, "Cannot listen on %s; no control API there", sa.sun_path);
		return 0;
	}
	r = sd_event_add_io(event, &c->source, fd, EPOLLIN, on_control, c);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the control socket");
	c->fd = TAKE_FD(fd);
	log_debug("Control API on %s", sa.sun_path);
	return 0;
}

void control_stop(struct wbg_control *c)
{
	for (size_t i = 0; i < WBG_CONTROL_CONNS_MAX; i++)
		c->conns[i] = sd_bus_flush_close_unref(c->conns[i]);
	c->source = sd_event_source_disable_unref(c->source);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -EBADF;
		(void)unlink(c->path);
	}
}
