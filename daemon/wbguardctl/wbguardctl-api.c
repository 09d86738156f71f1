/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "wbg-runtime.h"
#include "wbg-base.h"
#include "wbguardctl-api.h"
#include "handover-table.h"


/* Exit status when wbguardd cannot be reached or refuses. */

static int connect_daemon(const struct ctl_opts *o, sd_bus **ret)
{
	int r;

	if (!o->socket) {
		r = sd_bus_open_system(ret);
		return r < 0 ? log_error_errno(r, "Cannot connect to the system bus") : 0;
	}
	/* as long as sd-bus's own method call timeout */
	r = control_connect(o->socket, control_now_usec() + 25ULL * 1000 * 1000, ret);
	return r < 0 ? log_error_errno(r, "Cannot reach wbguardd at %s (is it running?)", o->socket) : 0;
}

static int call(const struct ctl_opts *o, sd_bus *bus, const char *method, uint64_t timeout_usec,
		sd_bus_message **ret, const char *types, ...)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	va_list ap;
	int r;

	r = sd_bus_message_new_method_call(bus, &req, o->socket ? NULL : WBG_BUS_NAME, WBG_BUS_PATH, WBG_BUS_IFACE, method);
	if (r >= 0 && types) {
		va_start(ap, types);
		r = sd_bus_message_appendv(req, types, ap);
		va_end(ap);
	}
	if (r < 0)
		return log_error_errno(r, "Cannot build the %s call", method);
	r = sd_bus_call(bus, req, timeout_usec, &error, ret);
	if (r < 0) {
		log_error("%s: %s", method, error.message ? error.message : strerror(-r));
		sd_bus_error_free(&error);
	}
	return r;
}

static void print_json(struct json_object *j)
{
	puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static bool selected(const struct ctl_opts *o, const char *pod, const char *ns, const char *name)
{
	return (!o->pod || strcmp(o->pod, pod) == 0) && (!o->namespace || strcmp(o->namespace, ns) == 0) &&
	       (!o->container || strcmp(o->container, name) == 0);
}

int ctl_list(const struct ctl_opts *o)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct json_object *arr = json_object_new_array();
	const char *path, *cid, *pod, *ns, *name;
	uint64_t id, dirty, wb;
	int populated, r;

	if (connect_daemon(o, &bus) < 0 || call(o, bus, "ListCgroups", 0, &reply, NULL) < 0) {
		json_object_put(arr);
		return EXIT_UNREACHABLE;
	}
	r = sd_bus_message_enter_container(reply, 'a', "(tsbttssss)");
	if (!o->json && r >= 0)
		printf("%-10s %-9s %12s %12s  %-30s %s\n", "ID", "POPULATED", "DIRTY", "WRITEBACK", "POD", "CGROUP");
	while (r >= 0 && (r = sd_bus_message_read(reply, "(tsbttssss)", &id, &path, &populated, &dirty, &wb, &cid, &pod,
						  &ns, &name)) > 0) {
		struct json_object *c;

		if (!selected(o, pod, ns, name))
			continue;
		c = json_object_new_object();

		json_object_object_add(c, "id", json_object_new_uint64(id));
		json_object_object_add(c, "cgroup", json_object_new_string(path));
		json_object_object_add(c, "populated", json_object_new_boolean(populated));
		json_object_object_add(c, "file_dirty_bytes", json_object_new_uint64(dirty));
		json_object_object_add(c, "file_writeback_bytes", json_object_new_uint64(wb));
		if (*cid)
			json_object_object_add(c, "container_id", json_object_new_string(cid));
		if (*pod) {
			json_object_object_add(c, "pod", json_object_new_string(pod));
			json_object_object_add(c, "namespace", json_object_new_string(ns));
			json_object_object_add(c, "container", json_object_new_string(name));
		}
		json_object_array_add(arr, c);
		if (!o->json) {
			char who[300];

			snprintf(who, sizeof(who), "%s%s%s%s%s", ns, *ns ? "/" : "", pod, *name ? "/" : "", name);
			printf("%-10" PRIu64 " %-9s %12" PRIu64 " %12" PRIu64 "  %-30s /%s\n", id, populated ? "yes" : "no",
			       dirty, wb, *who ? who : "-", path);
		}
	}
	if (r < 0) {
		json_object_put(arr);
		return log_error_errno(r, "Bad ListCgroups reply"), EXIT_UNREACHABLE;
	}
	if (o->json)
		print_json(arr);
	json_object_put(arr);
	return 0;
}

static int flush_one(const struct ctl_opts *o, const char *cgroup, bool wait);

/* The cgroups --pod, --namespace and --container select: a pod's own
 * cgroup where it has one, else its containers'. */
static int flush_selected(const struct ctl_opts *o, bool wait)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct json_object *own = json_object_new_array(), *containers = json_object_new_array(), *pick;
	const char *path, *cid, *pod, *ns, *name;
	uint64_t id, dirty, wb;
	int populated, r, worst = 0;

	if (connect_daemon(o, &bus) < 0 || call(o, bus, "ListCgroups", 0, &reply, NULL) < 0) {
		json_object_put(own);
		json_object_put(containers);
		return EXIT_UNREACHABLE;
	}
	r = sd_bus_message_enter_container(reply, 'a', "(tsbttssss)");
	while (r >= 0 && (r = sd_bus_message_read(reply, "(tsbttssss)", &id, &path, &populated, &dirty, &wb, &cid, &pod,
						  &ns, &name)) > 0)
		if (*pod && selected(o, pod, ns, name))
			json_object_array_add(*name ? containers : own, json_object_new_string(path));
	pick = !o->container && json_object_array_length(own) ? own : containers;
	if (json_object_array_length(pick) == 0)
		log_error("No registered container or pod matches%s%s%s%s%s%s", o->namespace ? " --namespace " : "",
			  o->namespace ?: "", o->pod ? " --pod " : "", o->pod ?: "", o->container ? " --container " : "",
			  o->container ?: "");
	for (size_t i = 0; i < json_object_array_length(pick); i++) {
		char p[4096];

		snprintf(p, sizeof(p), "/%s", json_object_get_string(json_object_array_get_idx(pick, i)));
		r = flush_one(o, p, wait);
		if (r > worst)
			worst = r;
	}
	r = json_object_array_length(pick) ? worst : 1;
	json_object_put(own);
	json_object_put(containers);
	return r;
}

int ctl_flush(const struct ctl_opts *o, const char *cgroup, bool wait)
{
	return cgroup ? flush_one(o, cgroup, wait) : flush_selected(o, wait);
}

static int flush_one(const struct ctl_opts *o, const char *cgroup, bool wait)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	uint64_t timeout = wait ? (uint64_t)(o->timeout * 1e6) : 0, id;
	const char *outcome, *reason;

	/* the call's own timeout: the daemon answers at ours, give it a second more */
	if (connect_daemon(o, &bus) < 0 || call(o, bus, "FlushCgroup", timeout + 5 * 1000 * 1000, &reply, "st", cgroup,
						timeout) < 0)
		return EXIT_UNREACHABLE;
	if (sd_bus_message_read(reply, "tss", &id, &outcome, &reason) < 0)
		return log_error("Bad FlushCgroup reply"), EXIT_UNREACHABLE;
	if (o->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "handover", json_object_new_uint64(id));
		json_object_object_add(j, "outcome", json_object_new_string(outcome));
		json_object_object_add(j, "reason", json_object_new_string(reason));
		print_json(j);
		json_object_put(j);
	} else
		printf("handover %" PRIu64 ": %s%s%s\n", id, outcome, *reason ? ": " : "", reason);
	/* watched: on-evidence writes it only when a live cgroup dirties its
	 * files, so there is nothing to wait for; drained: the kernel wrote
	 * it */
	if (strcmp(outcome, "flushed") == 0 || strcmp(outcome, "clean") == 0 || strcmp(outcome, "watched") == 0 ||
	    strcmp(outcome, "drained") == 0)
		return 0;
	if (strcmp(outcome, "pending") == 0)
		return wait ? 4 : 0;
	return 1;
}

int ctl_handovers(const struct ctl_opts *o, unsigned limit)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct json_object *arr = json_object_new_array();
	const char *rec;
	int r;

	if (connect_daemon(o, &bus) < 0 || call(o, bus, "ListHandovers", 0, &reply, "u", limit) < 0) {
		json_object_put(arr);
		return EXIT_UNREACHABLE;
	}
	r = sd_bus_message_enter_container(reply, 'a', "s");
	if (!o->json && r >= 0)
		printf("%-6s %-12s %-11s %9s %9s  %-19s %6s  %-24s %s\n", "ID", "TRIGGER", "OUTCOME", "DIRTY", "WRITTEN",
		       "ENDED", "AGE", "NAMESPACE/POD/CONTAINER", "CGROUP");
	while (r >= 0 && (r = sd_bus_message_read(reply, "s", &rec)) > 0) {
		struct json_object *j = json_tokener_parse(rec);
		struct handover_row row;

		if (!j)
			continue;
		/* the records' clock is this boot's CLOCK_MONOTONIC */
		if (!o->json && handover_row_make(j, control_now_usec(), time(NULL), &row) >= 0)
			printf("%-6s %-12s %-11s %9s %9s  %-19s %6s  %-24s %s\n", row.id, row.trigger, row.outcome, row.dirty,
			       row.written, row.ended, row.age, row.who, row.cgroup);
		json_object_array_add(arr, j);
	}
	if (o->json)
		print_json(arr);
	json_object_put(arr);
	return r < 0 ? EXIT_UNREACHABLE : 0;
}

int ctl_metrics(const struct ctl_opts *o)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	const char *text;

	if (connect_daemon(o, &bus) < 0 || call(o, bus, "Metrics", 0, &reply, NULL) < 0 ||
	    sd_bus_message_read(reply, "s", &text) < 0)
		return EXIT_UNREACHABLE;
	/* the Prometheus text format; --json does not apply */
	fputs(text, stdout);
	return 0;
}

int ctl_reload(const struct ctl_opts *o)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	int r;

	if (connect_daemon(o, &bus) < 0)
		return EXIT_UNREACHABLE;
	r = sd_bus_message_new_method_call(bus, &req, o->socket ? NULL : WBG_BUS_NAME, WBG_BUS_PATH, WBG_BUS_IFACE,
					   "Reload");
	if (r < 0)
		return log_error_errno(r, "Cannot build the Reload call"), EXIT_UNREACHABLE;
	r = sd_bus_call(bus, req, 0, &error, NULL);
	if (r >= 0)
		return 0;
	log_error("Reload: %s", error.message ? error.message : strerror(-r));
	/* wbguardd answered and refused the file (systemctl reload fails
	 * with it): 1; not there, or not ours to ask: 3 */
	r = sd_bus_error_is_set(&error) && !sd_bus_error_has_name(&error, SD_BUS_ERROR_ACCESS_DENIED) &&
			    !sd_bus_error_has_name(&error, SD_BUS_ERROR_NO_REPLY) &&
			    !sd_bus_error_has_name(&error, SD_BUS_ERROR_SERVICE_UNKNOWN)
		    ? 1
		    : EXIT_UNREACHABLE;
	sd_bus_error_free(&error);
	return r;
}

struct json_object *ctl_daemon_status(const struct ctl_opts *o)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct json_object *j;
	const char *key, *contents;
	int r;

	if (connect_daemon(o, &bus) < 0 || call(o, bus, "Status", 0, &reply, NULL) < 0)
		return NULL;
	j = json_object_new_object();
	r = sd_bus_message_enter_container(reply, 'a', "{sv}");
	while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
		char type;
		union {
			const char *s;
			int b;
			uint32_t u;
			uint64_t t;
		} v;

		r = sd_bus_message_read(reply, "s", &key);
		if (r >= 0)
			r = sd_bus_message_peek_type(reply, NULL, &contents);
		if (r < 0)
			break;
		type = contents[0];
		r = sd_bus_message_read(reply, "v", contents, &v);
		if (r < 0)
			break;
		json_object_object_add(j, key,
				       type == 's' ? json_object_new_string(v.s)
				       : type == 'b' ? json_object_new_boolean(v.b)
				       : type == 'u' ? json_object_new_uint64(v.u)
						     : json_object_new_uint64(v.t));
		r = sd_bus_message_exit_container(reply);
	}
	if (r < 0) {
		log_error_errno(r, "Bad Status reply");
		json_object_put(j);
		return NULL;
	}
	return j;
}

int ctl_ping(const struct ctl_opts *o, unsigned timeout_sec)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_free_ char *version = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	uint64_t start = control_now_usec(), deadline = start + (uint64_t)timeout_sec * 1000000;
	int r;

	/* The liveness probe the DaemonSet runs: the event loop answers on
	 * the root-only control socket, which no tenant's connections can
	 * crowd out as they can a TCP port. One deadline for all of it. */
	r = o->socket ? control_connect(o->socket, deadline, &bus) : sd_bus_open_system(&bus);
	if (r < 0)
		return log_error_errno(r, "Cannot reach wbguardd%s%s", o->socket ? " at " : "", o->socket ? o->socket : ""),
		       EXIT_UNREACHABLE;
	r = sd_bus_set_method_call_timeout(bus, deadline > control_now_usec() ? deadline - control_now_usec() : 1);
	if (r >= 0)
		r = sd_bus_get_property_string(bus, o->socket ? NULL : WBG_BUS_NAME, WBG_BUS_PATH, WBG_BUS_IFACE, "Version",
					       &error, &version);
	if (r < 0) {
		log_error("wbguardd did not answer in %u s: %s", timeout_sec, error.message ? error.message : strerror(-r));
		sd_bus_error_free(&error);
		return EXIT_UNREACHABLE;
	}
	printf("wbguardd %s answered in %.0f ms\n", version, (double)(control_now_usec() - start) / 1000);
	return 0;
}
