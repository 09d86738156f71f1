/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control API's D-Bus objects: io.wbguard1.Manager at /io/wbguard1, on
 * the system bus and on every control socket connection. Methods are root's
 * only (the policy file says so on the system bus; each call checks too);
 * properties are readable by anyone the bus lets through. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "wbg-runtime.h"
#include "wbg-base.h"
#include "manager.h"


static int check_root(sd_bus_message *msg, sd_bus_error *error)
{
	_cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
	uid_t uid;
	int r;

	r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
	if (r >= 0)
		r = sd_bus_creds_get_euid(creds, &uid);
	if (r < 0)
		return sd_bus_error_set_errnof(error, r, "Cannot tell who is calling");
	if (uid != 0)
		return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "Only root may call wbguardd's methods");
	return 0;
}

#define CHECK_ROOT(msg, error)                          \
	do {                                            \
		int _r_ = check_root((msg), (error));   \
		if (_r_ < 0)                            \
			return _r_;                     \
		((struct manager *)userdata)->api_calls++; \
	} while (0)

static int method_register(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	const char *id, *cgroup, *bundle, *k, *v;
	const char *keys[WBG_CONTAINER_ANNOTATIONS_MAX + 1], *values[WBG_CONTAINER_ANNOTATIONS_MAX + 1];
	size_t n = 0;
	int r;

	CHECK_ROOT(msg, error);
	r = sd_bus_message_read(msg, "sss", &id, &cgroup, &bundle);
	if (r < 0)
		return r;
	r = sd_bus_message_enter_container(msg, 'a', "{ss}");
	if (r < 0)
		return r;
	while ((r = sd_bus_message_read(msg, "{ss}", &k, &v)) > 0) {
		if (n > WBG_CONTAINER_ANNOTATIONS_MAX)
			return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
						 "container %s: more than %d annotations", id, WBG_CONTAINER_ANNOTATIONS_MAX);
		keys[n] = k;
		values[n++] = v;
	}
	if (r < 0)
		return r;
	r = manager_register_container(m, id, cgroup, bundle, keys, values, n, error);
	if (r < 0)
		return r;
	return sd_bus_reply_method_return(msg, NULL);
}

static int method_flush(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	const char *cgroup;
	uint64_t timeout;
	int r;

	CHECK_ROOT(msg, error);
	r = sd_bus_message_read(msg, "st", &cgroup, &timeout);
	if (r < 0)
		return r;
	return manager_flush_cgroup(userdata, cgroup, timeout, msg, error);
}

/* The hook's poststop names only its container: what it registered at
 * createRuntime decides the cgroup, so a container cannot name another's. */
static int method_flush_container(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	const struct wbg_container *ct;
	_cleanup_free_ char *path = NULL;
	const char *id;
	uint64_t timeout;
	int r;

	CHECK_ROOT(msg, error);
	r = sd_bus_message_read(msg, "st", &id, &timeout);
	if (r < 0)
		return r;
	ct = containers_find_id(&m->containers, id);
	if (!ct)
		return sd_bus_error_setf(error, "io.wbguard1.NoSuchContainer", "No container %s was registered", id);
	path = strdup(ct->path);
	if (!path)
		return -ENOMEM;
	return manager_flush_cgroup(m, path, timeout, msg, error);
}

static int list_one(sd_bus_message *reply, struct manager *m, const struct wbg_cgroup *c)
{
	const struct wbg_container *ct = containers_find(&m->containers, c->path);
	uint64_t dirty = 0, wb = 0;

	/* a name that is not UTF-8 (a tenant's cgroup may have any bytes)
	 * escaped: D-Bus would refuse the whole reply */
	_cleanup_free_ char *path = utf8_escape_dup(c->path, false);

	if (!path)
		return -ENOMEM;
	/* read now; a cgroup removed meanwhile shows 0 */
	(void)cg_read_dirty(m->cfg.cgroup_root, c->path, &dirty, &wb);
	return sd_bus_message_append(reply, "(tsbttssss)", c->id, path, c->populated, dirty, wb,
				     ct ? ct->id : "", ct && ct->pod ? ct->pod : "",
				     ct && ct->namespace ? ct->namespace : "", ct && ct->name ? ct->name : "");
}

struct list_ctx {
	struct manager *m;
	sd_bus_message *reply;
	int r;
};

static void list_cb(struct wbg_cgroup *c, void *userdata)
{
	struct list_ctx *l = userdata;

	if (l->r >= 0 && c->in_scope && !c->removed && *c->path)
		l->r = list_one(l->reply, l->m, c);
}

static int method_list(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct list_ctx l = { .m = userdata };
	int r;

	CHECK_ROOT(msg, error);
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(tsbttssss)");
	if (r < 0)
		return r;
	l.reply = reply;
	registry_foreach(&l.m->reg, list_cb, &l);
	if (l.r < 0)
		return l.r;
	r = sd_bus_message_close_container(reply);
	return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int method_handovers(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct manager *m = userdata;
	uint32_t limit;
	int r;

	CHECK_ROOT(msg, error);
	r = sd_bus_message_read(msg, "u", &limit);
	if (r < 0)
		return r;
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "s");
	/* oldest first, as in handovers.jsonl */
	for (uint64_t i = lifecycle_recent_first(&m->lifecycle, limit); r >= 0 && lifecycle_recent_at(&m->lifecycle, i); i++) {
		const struct wbg_recent *rec = lifecycle_recent_at(&m->lifecycle, i);
		/* a record of a cgroup whose name is not UTF-8 would make D-Bus
		 * refuse every record in the reply */
		_cleanup_free_ char *json = utf8_escape_dup(rec && rec->json ? rec->json : "{}", true);

		r = json ? sd_bus_message_append(reply, "s", json) : -ENOMEM;
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

/* The verdicts from the evidence as it is now, without storing them: a
 * probe changes nothing another reader sees. */
static int method_verify(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct wbg_verdicts v;
	const struct wbg_evidence *e = &v.evidence;

	CHECK_ROOT(msg, error);
	manager_probe_verdict(userdata, &v);
	return sd_bus_reply_method_return(
		msg, "ssa{st}", wbg_verdict_to_string(v.dying_wb), wbg_verdict_to_string(v.bdev_flush), 7,
		"ok_to_dying", e->ok_to_dying, "enoent_to_dying", e->enoent_to_dying, "dying_wb_found",
		e->lookup_dying_found, "bdev_flushes", e->bdev_flushes, "bdev_dirty_own_path", e->bdev_dirty_own_path,
		"bdev_dirty_owner_wb_path", e->bdev_dirty_shared_path, "dormant", (uint64_t)verdict_bdev_dormant(e));
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	int r;

	CHECK_ROOT(msg, error);
	r = manager_reload(m);
	if (r < 0)
		return sd_bus_error_set_errnof(error, r, "%s",
					       m->reload_error[0] ? m->reload_error
								  : "Reload failed; the running configuration stays (see the log)");
	return sd_bus_reply_method_return(msg, NULL);
}

static int method_metrics(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	FILE *f;

	CHECK_ROOT(msg, error);
	f = open_memstream(&buf, &n);
	if (!f)
		return -ENOMEM;
	metrics_write(userdata, f);
	if (fclose(f) != 0)
		return -ENOMEM;
	return sd_bus_reply_method_return(msg, "s", buf);
}

static int method_status(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	unsigned cur = 0;

	CHECK_ROOT(msg, error);
	(void)sysctl_keeper_read(expiry_sysctl(&m->expiry), &cur);
	return sd_bus_reply_method_return(
		msg, "a{sv}", 16, "version", "s", WBGUARD_VERSION, "config", "s", m->config_path, "dying_wb_fallback", "s",
		wbg_verdict_to_string(m->verdicts.dying_wb), "bdev_foreign_flush", "s",
		wbg_verdict_to_string(m->verdicts.bdev_flush), "mitigating", "b", m->mitigating, "bpf", "b", m->bpf != NULL,
		"system_bus", "b", m->bus_name_owned,
		/* whether removals it never saw (down, forgotten, refused) are
		 * covered too, through the stall itself */
		"stall_evidence", "s", manager_stall_evidence(m),
		"tracked_cgroups", "t", (uint64_t)m->reg.n, "registered_containers",
		"t", (uint64_t)containers_count(&m->containers), "active_handovers", "t", (uint64_t)lifecycle_n_active(&m->lifecycle),
		"handovers_total", "t", lifecycle_total(&m->lifecycle), "flushed_device_bytes", "t",
		lifecycle_flushed_device_bytes(&m->lifecycle), "dirty_expire_centisecs", "u", cur,
		/* NRI: its phase ("off" without it) and the runtime it is registered with */
		"nri", "s", m->nri ? nri_phase_to_string(nri_phase(m->nri)) : "off", "nri_runtime", "s",
		m->nri ? nri_runtime(m->nri) : "");
}

static int property_verdict(sd_bus *bus, const char *path, const char *interface, const char *property,
			    sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;

	return sd_bus_message_append(reply, "s",
				     wbg_verdict_to_string(strcmp(property, "DyingWbFallback") == 0 ? m->verdicts.dying_wb
												     : m->verdicts.bdev_flush));
}

static int property_simple(sd_bus *bus, const char *path, const char *interface, const char *property,
			   sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;

	if (strcmp(property, "Version") == 0)
		return sd_bus_message_append(reply, "s", WBGUARD_VERSION);
	return sd_bus_message_append(reply, "b", (int)m->mitigating);
}

static int property_counter(sd_bus *bus, const char *path, const char *interface, const char *property,
			    sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	uint64_t v;

	if (strcmp(property, "TrackedCgroups") == 0)
		v = m->reg.n;
	else if (strcmp(property, "RegisteredContainers") == 0)
		v = containers_count(&m->containers);
	else if (strcmp(property, "FlushedDeviceBytes") == 0)
		v = lifecycle_flushed_device_bytes(&m->lifecycle);
	else
		v = lifecycle_total(&m->lifecycle);
	return sd_bus_message_append(reply, "t", v);
}

static const sd_bus_vtable manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Version", "s", property_simple, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("DyingWbFallback", "s", property_verdict, 0, 0),
	SD_BUS_PROPERTY("BdevForeignFlush", "s", property_verdict, 0, 0),
	SD_BUS_PROPERTY("Mitigating", "b", property_simple, 0, 0),
	SD_BUS_PROPERTY("TrackedCgroups", "t", property_counter, 0, 0),
	SD_BUS_PROPERTY("RegisteredContainers", "t", property_counter, 0, 0),
	SD_BUS_PROPERTY("HandoversTotal", "t", property_counter, 0, 0),
	SD_BUS_PROPERTY("FlushedDeviceBytes", "t", property_counter, 0, 0),
	SD_BUS_METHOD_WITH_ARGS("RegisterContainer",
				SD_BUS_ARGS("s", id, "s", cgroup, "s", bundle, "a{ss}", annotations),
				SD_BUS_NO_RESULT, method_register, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("FlushCgroup", SD_BUS_ARGS("s", cgroup, "t", timeout_usec),
				SD_BUS_RESULT("t", handover_id, "s", outcome, "s", reason), method_flush,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("FlushContainer", SD_BUS_ARGS("s", id, "t", timeout_usec),
				SD_BUS_RESULT("t", handover_id, "s", outcome, "s", reason), method_flush_container,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("ListCgroups", SD_BUS_NO_ARGS,
				SD_BUS_RESULT("a(tsbttssss)", cgroups), method_list, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("ListHandovers", SD_BUS_ARGS("u", limit), SD_BUS_RESULT("as", records),
				method_handovers, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Verify", SD_BUS_NO_ARGS,
				SD_BUS_RESULT("s", dying_wb_fallback, "s", bdev_foreign_flush, "a{st}", evidence),
				method_verify, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Status", SD_BUS_NO_ARGS, SD_BUS_RESULT("a{sv}", status), method_status,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Metrics", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", text), method_metrics,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END,
};

int manager_bus_add_objects(sd_bus *bus, void *userdata)
{
	return sd_bus_add_object_vtable(bus, NULL, WBG_BUS_PATH, WBG_BUS_IFACE, manager_vtable, userdata);
}

static bool call_on_bus(void *call, const void *bus)
{
	return sd_bus_message_get_bus(call) == bus;
}

void manager_bus_closed(sd_bus *bus, void *userdata)
{
	struct manager *m = userdata;
	unsigned n = lifecycle_drop_waiters(&m->lifecycle, call_on_bus, bus);

	if (n)
		log_debug("Dropped %u flush waiter(s) of a control connection that closed", n);
}

#define NAME_RETRY_USEC (2ULL * 1000 * 1000)
#define NAME_RETRIES 30

static void request_name(struct manager *m);

static int on_name_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	m->name_retry_source = sd_event_source_disable_unref(m->name_retry_source);
	if (m->systemd.bus)
		request_name(m);
	return 0;
}

static int on_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct manager *m = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(reply);

	if (!e) {
		m->bus_name_owned = true;
		m->name_retries = 0;
		log_info("Serving the control API as %s on the system bus", WBG_BUS_NAME);
		return 0;
	}
	/* The bus's policy may not have this package's file yet (dbus-daemon
	 * reloads it a moment after it appears): asked again a while. */
	if (m->name_retries++ < NAME_RETRIES && !m->name_retry_source &&
	    sd_event_add_time_relative(m->event, &m->name_retry_source, CLOCK_MONOTONIC, NAME_RETRY_USEC, 0,
				       on_name_retry, m) >= 0) {
		log_debug("Cannot own %s on the system bus yet (%s); asking again in 2 s", WBG_BUS_NAME, e->message);
		return 0;
	}
	log_notice("Cannot own %s on the system bus (%s); the control socket still serves the API", WBG_BUS_NAME,
		   e->message);
	return 0;
}

static void request_name(struct manager *m)
{
	int r = sd_bus_request_name_async(m->systemd.bus, NULL, WBG_BUS_NAME, 0, on_name, m);

	if (r < 0)
		log_warning_errno(r, "Cannot offer the control API on the system bus");
}

void manager_bus_connected(void *userdata, sd_bus *bus)
{
	struct manager *m = userdata;
	int r;

	m->bus_name_owned = false;
	m->name_retries = 0;
	m->name_retry_source = sd_event_source_disable_unref(m->name_retry_source);
	if (!bus) {
		manager_bus_closed(m->systemd.bus, m); /* its callers are gone with it */
		return;
	}
	r = manager_bus_add_objects(bus, m);
	if (r >= 0)
		r = sd_bus_request_name_async(bus, NULL, WBG_BUS_NAME, 0, on_name, m);
	if (r < 0)
		log_warning_errno(r, "Cannot offer the control API on the system bus");
}
