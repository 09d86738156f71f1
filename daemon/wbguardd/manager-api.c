/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control API's two methods that change something: a flush asked for
 * (answered by the handover lifecycle), and a container registered by the
 * OCI hook. Their arguments are a tenant's: checked here, bounded. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "wbg-base.h"
#include "manager.h"
#include "wbg-runtime.h"

int manager_flush_cgroup(struct manager *m, const char *path, uint64_t timeout_usec, sd_bus_message *call,
			 sd_bus_error *error)
{
	char rel[PATH_MAX];
	int r;

	r = oci_cgroup_path(path, rel, sizeof(rel));
	if (r < 0)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
					 "'%s' is not a cgroup path under the cgroupfs root", path);
	/* What inotify has queued first: a removal the caller just made is
	 * then known. */
	if (watch_process(&m->watch) == -ENOMEM)
		return -ENOMEM;
	r = lifecycle_flush_request(&m->lifecycle, registry_find_path(&m->reg, rel), rel, timeout_usec, call);
	if (r == -ENOENT)
		return sd_bus_error_setf(error, "io.wbguard1.NoSuchCgroup",
					 "wbguardd does not track /%s and has no recent handover of it", rel);
	if (r == -EBUSY)
		return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED, "Too many callers waiting for flushes");
	return r;
}

int manager_note_container(struct manager *m, unsigned source, int level, const char *id, const char *path,
			   const char *bundle, const char *const *keys, const char *const *values, size_t n, char *why,
			   size_t why_size)
{
	char rel[PATH_MAX], sources[32];
	struct wbg_cgroup *c;
	const struct wbg_container *ct;
	int r;

	r = containers_check(id, path, n, rel, sizeof(rel), why, why_size);
	if (r < 0)
		return r;
	r = containers_register_from(&m->containers, source, rel, id, bundle, keys, values, n);
	if (r < 0)
		return log_oom();
	ct = containers_find(&m->containers, rel);
	log_full_errno(level, 0, "Registered container %s: cgroup /%s%s%s%s%s (%s)", id, rel, ct->pod ? ", pod " : "",
		 ct->pod ? (ct->namespace ? ct->namespace : "") : "", ct->pod ? "/" : "", ct->pod ? ct->pod : "",
		 containers_sources_to_string(ct->sources, sources, sizeof(sources)));
	(void)watch_process(&m->watch); /* its cgroup is likely news to us */
	c = registry_find_path(&m->reg, rel);
	if (c)
		containers_set_tracked(&m->containers, rel);
	if (c && c->in_scope && !c->removed)
		expiry_container_registered(&m->expiry, c->id, c->in_scope, c->populated);
	return 0;
}

int manager_register_container(struct manager *m, const char *id, const char *path, const char *bundle,
			       const char *const *keys, const char *const *values, size_t n, sd_bus_error *error)
{
	char why[256];
	int r;

	r = manager_note_container(m, WBG_SOURCE_HOOK, LOG_INFO, id, path, bundle, keys, values, n, why, sizeof(why));
	if (r == -EINVAL || r == -E2BIG) /* the caller hears why */
		return sd_bus_error_set(error, r == -E2BIG ? SD_BUS_ERROR_LIMITS_EXCEEDED : SD_BUS_ERROR_INVALID_ARGS,
					why);
	return r;
}
