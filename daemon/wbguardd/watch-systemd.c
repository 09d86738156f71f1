/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "watch-systemd.h"

static const char *strna(const char *s)
{
	return s ? s : "n/a";
}

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define RECONNECT_MIN_USEC (1000 * 1000)
#define SYSTEM_BUS_DIR "/run/dbus"
#define SYSTEM_BUS_SOCKET SYSTEM_BUS_DIR "/system_bus_socket"
#define RECONNECT_MAX_USEC (30 * 1000 * 1000)

static int connect_bus(struct wbg_systemd *w);
static void schedule_reconnect(struct wbg_systemd *w);

/* The interface holding ControlGroup, by unit type. */
static const char *cgroup_iface(const char *unit)
{
	const char *dot = strrchr(unit, '.');

	if (!dot)
		return NULL;
	if (strcmp(dot, ".service") == 0)
		return "org.freedesktop.systemd1.Service";
	if (strcmp(dot, ".scope") == 0)
		return "org.freedesktop.systemd1.Scope";
	if (strcmp(dot, ".slice") == 0)
		return "org.freedesktop.systemd1.Slice";
	return NULL; /* sockets, mounts...: no cgroup of interest */
}

static int on_control_group(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;
	const char *cg;

	if (sd_bus_message_is_method_error(reply, NULL)) {
		log_debug("systemd: no ControlGroup: %s", sd_bus_message_get_error(reply)->message);
		return 0; /* the unit vanished meanwhile: normal */
	}
	if (sd_bus_message_read(reply, "v", "s", &cg) < 0 || !*cg)
		return 0;
	log_debug("systemd: stopping %s", cg);
	w->ops->stopping(w->userdata, cg);
	return 0;
}

static void query_control_group(struct wbg_systemd *w, const char *unit_path, const char *unit)
{
	const char *iface = cgroup_iface(unit);
	int r;

	if (!iface)
		return;
	r = sd_bus_call_method_async(w->bus, NULL, SD_DEST, unit_path, "org.freedesktop.DBus.Properties", "Get",
				     on_control_group, w, "ss", iface, "ControlGroup");
	if (r < 0)
		log_debug_errno(r, "Cannot ask for %s's ControlGroup", unit);
}

/* Properties of a new job: a stop job is what we look for. */
static int on_job_props(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;
	const char *type = NULL, *unit = NULL, *unit_path = NULL;
	int r;

	if (sd_bus_message_is_method_error(reply, NULL)) {
		log_debug("systemd: job gone before we asked: %s", sd_bus_message_get_error(reply)->message);
		return 0; /* the job finished already */
	}
	r = sd_bus_message_enter_container(reply, 'a', "{sv}");
	if (r < 0)
		return 0;
	while (sd_bus_message_enter_container(reply, 'e', "sv") > 0) {
		const char *name;

		if (sd_bus_message_read(reply, "s", &name) < 0)
			break;
		if (strcmp(name, "JobType") == 0)
			r = sd_bus_message_read(reply, "v", "s", &type);
		else if (strcmp(name, "Unit") == 0)
			r = sd_bus_message_read(reply, "v", "(so)", &unit, &unit_path);
		else
			r = sd_bus_message_skip(reply, "v");
		if (r < 0 || sd_bus_message_exit_container(reply) < 0)
			break;
	}
	log_debug("systemd: job type %s unit %s", strna(type), strna(unit));
	if (type && unit && strcmp(type, "stop") == 0)
		w->stop_jobs++;
	if (type && unit)
		w->ops->job_type(w->userdata, unit, type);
	return 0;
}

static int on_job_new(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;
	const char *job, *unit;
	uint32_t id;
	int r;

	if (sd_bus_message_read(msg, "uos", &id, &job, &unit) < 0 || !cgroup_iface(unit))
		return 0;
	log_debug("systemd: job %u for %s", id, unit);
	/* The job runs in systemd's next loop iteration; asking for its type
	 * first would lose the race against the kill. A job for a unit whose
	 * cgroup is populated starts the flush now; its type comes later. */
	w->ops->job(w->userdata, unit);
	r = sd_bus_call_method_async(w->bus, NULL, SD_DEST, job, "org.freedesktop.DBus.Properties", "GetAll",
				     on_job_props, w, "s", "org.freedesktop.systemd1.Job");
	if (r < 0)
		log_debug_errno(r, "Cannot ask for job %s", job);
	return 0;
}

/* ActiveState "deactivating" on a unit: same meaning as a stop job, and
 * also seen for stops that need no job (a scope whose processes exit). */
static int on_unit_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;
	_cleanup_free_ char *unit = NULL;
	const char *iface, *path = sd_bus_message_get_path(msg), *state = NULL;

	if (sd_bus_message_read(msg, "s", &iface) < 0 || strcmp(iface, "org.freedesktop.systemd1.Unit") != 0)
		return 0;
	if (sd_bus_message_enter_container(msg, 'a', "{sv}") < 0)
		return 0;
	while (sd_bus_message_enter_container(msg, 'e', "sv") > 0) {
		const char *name;
		int r;

		if (sd_bus_message_read(msg, "s", &name) < 0)
			break;
		if (strcmp(name, "ActiveState") == 0)
			r = sd_bus_message_read(msg, "v", "s", &state);
		else
			r = sd_bus_message_skip(msg, "v");
		if (r < 0 || sd_bus_message_exit_container(msg) < 0)
			break;
	}
	if (!state || strcmp(state, "deactivating") != 0 || !path)
		return 0;
	if (sd_bus_path_decode(path, SD_PATH "/unit", &unit) <= 0)
		return 0;
	query_control_group(w, path, unit);
	return 0;
}

static int on_unit_removed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;

	w->units_removed++;
	return 0;
}

static int on_reconnect(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_systemd *w = userdata;

	w->reconnect_source = sd_event_source_disable_unref(w->reconnect_source);
	if (connect_bus(w) < 0) {
		struct stat st;

		if (stat(SYSTEM_BUS_SOCKET, &st) < 0) {
			schedule_reconnect(w); /* gone for good: wait for it */
			return 0;
		}
		w->backoff_usec = w->backoff_usec * 2 > RECONNECT_MAX_USEC ? RECONNECT_MAX_USEC
										   : w->backoff_usec * 2;
		if (sd_event_add_time_relative(w->event, &w->reconnect_source, CLOCK_MONOTONIC,
					       w->backoff_usec, 0, on_reconnect, w) < 0)
			log_warning("Cannot arm the bus reconnect: inotify alone from now on");
	}
	return 0;
}

static int on_bus_dir(sd_event_source *s, const struct inotify_event *e, void *userdata)
{
	struct wbg_systemd *w = userdata;

	w->reconnect_source = sd_event_source_disable_unref(w->reconnect_source);
	if (connect_bus(w) < 0)
		schedule_reconnect(w);
	return 0;
}

/* Without a bus socket at all (no D-Bus on this host, or not yet), wait for
 * it to appear rather than poll: an idle daemon must not wake up. A socket
 * that exists but refuses (the bus restarting) is retried with backoff. */
static void schedule_reconnect(struct wbg_systemd *w)
{
	struct stat st;

	if (w->reconnect_source)
		return;
	if (stat(SYSTEM_BUS_SOCKET, &st) < 0) {
		/* /run/dbus, or /run until /run/dbus exists */
		if (sd_event_add_inotify(w->event, &w->reconnect_source, SYSTEM_BUS_DIR,
					 IN_CREATE | IN_MOVED_TO | IN_ONLYDIR, on_bus_dir, w) >= 0 ||
		    sd_event_add_inotify(w->event, &w->reconnect_source, "/run", IN_CREATE | IN_MOVED_TO | IN_ONLYDIR,
					 on_bus_dir, w) >= 0)
			return;
	}
	if (!w->backoff_usec)
		w->backoff_usec = RECONNECT_MIN_USEC;
	if (sd_event_add_time_relative(w->event, &w->reconnect_source, CLOCK_MONOTONIC, w->backoff_usec, 0,
				       on_reconnect, w) < 0)
		log_warning("Cannot arm the bus reconnect: inotify alone from now on");
}

static int on_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;

	log_notice("System bus connection lost; watching cgroupfs alone until it is back");
	w->disconnects++;
	w->ops->connected(w->userdata, NULL);
	w->bus = sd_bus_flush_close_unref(w->bus);
	schedule_reconnect(w);
	return 0;
}

/* systemd restarted (daemon-reexec, or a new PID 1 bus name owner):
 * subscribe again, or it sends us no JobNew. */
static int on_systemd_owner(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct wbg_systemd *w = userdata;
	const char *name, *old, *new;

	if (sd_bus_message_read(msg, "sss", &name, &old, &new) < 0)
		return 0;
	/* the match names systemd (arg0): nothing else should come here */
	log_debug("NameOwnerChanged for %s", name);
	if (!*new || strcmp(name, SD_DEST) != 0)
		return 0;
	(void)sd_bus_call_method_async(w->bus, NULL, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", NULL, NULL, "");
	return 0;
}

static int connect_bus(struct wbg_systemd *w)
{
	sd_bus *bus = NULL;
	int r;

	r = sd_bus_open_system(&bus);
	if (r < 0)
		return log_debug_errno(r, "No system bus");
	r = sd_bus_attach_event(bus, w->event, 0);
	if (r >= 0)
		r = sd_bus_match_signal_async(bus, NULL, SD_DEST, SD_PATH, SD_MANAGER, "JobNew", on_job_new, NULL, w);
	if (r >= 0)
		r = sd_bus_match_signal_async(bus, NULL, SD_DEST, SD_PATH, SD_MANAGER, "UnitRemoved", on_unit_removed,
					      NULL, w);
	if (r >= 0)
		r = sd_bus_add_match_async(bus, NULL,
					   "type='signal',sender='" SD_DEST "',interface='org.freedesktop.DBus.Properties',"
					   "member='PropertiesChanged',arg0='org.freedesktop.systemd1.Unit'",
					   on_unit_changed, NULL, w);
	if (r >= 0)
		/* systemd's name only (arg0): not every client that connects */
		r = sd_bus_add_match_async(bus, NULL,
					   "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
					   "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" SD_DEST "'",
					   on_systemd_owner, NULL, w);
	if (r >= 0)
		r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
					"org.freedesktop.DBus.Local", "Disconnected", on_disconnected, w);
	if (r >= 0)
		r = sd_bus_call_method_async(bus, NULL, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", NULL, NULL, "");
	if (r < 0) {
		sd_bus_flush_close_unref(bus);
		return log_debug_errno(r, "Cannot subscribe to systemd");
	}
	w->bus = bus;
	w->backoff_usec = 0;
	w->ops->connected(w->userdata, bus);
	log_info("Subscribed to systemd on the system bus");
	return 0;
}

int watch_systemd_start(struct wbg_systemd *w, sd_event *event, const struct wbg_systemd_ops *ops, void *userdata)
{
	int r;

	*w = (struct wbg_systemd){ .event = event, .ops = ops, .userdata = userdata };
	r = connect_bus(w);

	if (r < 0) {
		log_info("No system bus (%s); watching cgroupfs alone until one appears", strerror(-r));
		schedule_reconnect(w);
	}
	return 0;
}

void watch_systemd_stop(struct wbg_systemd *w)
{
	w->reconnect_source = sd_event_source_disable_unref(w->reconnect_source);
	w->bus = sd_bus_flush_close_unref(w->bus);
}

void watch_systemd_metrics(FILE *f, const struct wbg_systemd *w)
{
	metric_counter(f, "wbguard_systemd_stop_jobs_total", "systemd stop jobs seen on the bus.", w->stop_jobs);
	metric_counter(f, "wbguard_bus_disconnects_total", "Times the system bus went away.", w->disconnects);
	metric_value(f, "wbguard_system_bus_connected", "gauge", "1 while wbguardd is subscribed to systemd.",
		     w->bus ? 1 : 0);
}
