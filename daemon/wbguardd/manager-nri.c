/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardd as an NRI plugin (nri-plugin.h): the socket and the timer on
 * the loop, and what NRI reports going where the hook's registrations go.
 * NRI names every pod and container, at connect and as they are created:
 * it is a source of identity, not of timing (its RemoveContainer comes
 * after the cgroup is gone), so the cgroupfs, D-Bus and BPF triggers stay
 * what start a handover. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "manager.h"
#include "wbg-base.h"
#include "wbg-runtime.h"

#if WBG_HAVE_NRI
static uint64_t op_now(void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = 0;

	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &now);
	return now;
}

static int op_connect(void *userdata, int *ret_fd)
{
	struct manager *m = userdata;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -EBADF;

	if (strlen(m->cfg.nri_socket) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, m->cfg.nri_socket, strlen(m->cfg.nri_socket));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a local socket connects at once or not at all (a full backlog
	 * is EAGAIN: tried again later) */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* NRI's names as the CRI's annotations say them, for the container table:
 * the pod's, the container's and the expiry, from NRI's fields (no
 * runtime's allow-list in between). */
static void op_container(void *userdata, const struct wbg_nri_container *c)
{
	struct manager *m = userdata;
	const char *keys[5], *values[5];
	char why[256];
	size_t n = 0;
	int r;

	if (!*c->cgroups_path) {
		log_debug("NRI: %s %.80s has no cgroups path: not registered", c->sandbox ? "pod" : "container", c->id);
		return;
	}
	if (*c->pod) {
		keys[n] = "io.kubernetes.pod.name", values[n++] = c->pod;
		keys[n] = "io.kubernetes.pod.namespace", values[n++] = c->namespace;
	}
	if (*c->pod_uid)
		keys[n] = "io.kubernetes.pod.uid", values[n++] = c->pod_uid;
	if (*c->name)
		keys[n] = "io.kubernetes.container.name", values[n++] = c->name;
	if (c->dirty_expire)
		keys[n] = WBG_EXPIRY_ANNOTATION, values[n++] = c->dirty_expire;
	/* a synchronization's are known already, or counted in its summary:
	 * not a line each at every reconnect */
	r = manager_note_container(m, WBG_SOURCE_NRI, c->synchronizing ? LOG_DEBUG : LOG_INFO, c->id, c->cgroups_path,
				   NULL, keys, values, n, why, sizeof(why));
	if (r == -EINVAL || r == -E2BIG)
		log_notice("NRI: container not registered: %s", why);
}

static void op_removed(void *userdata, const char *id, const char *cgroups_path)
{
	struct manager *m = userdata;
	const struct wbg_container *c;
	char rel[PATH_MAX];

	if (oci_cgroup_path(cgroups_path, rel, sizeof(rel)) < 0)
		return;
	/* A container whose cgroup wbguardd tracks keeps its names until the
	 * cgroup departs (the handover, maybe still flushing, names it);
	 * one whose cgroup it never tracked (out of its roots, refused) is
	 * forgotten now, or the table would fill with the gone. */
	c = containers_find(&m->containers, rel);
	if (c && !c->tracked && strcmp(c->id, id) == 0) {
		log_debug("NRI: container %.80s removed, its cgroup /%s never tracked: forgotten", id, rel);
		containers_forget(&m->containers, rel);
	}
}

static void op_synced(void *userdata, unsigned pods, unsigned containers)
{
	manager_notify_status(userdata);
}

static const struct wbg_nri_ops nri_ops = {
	.now = op_now,
	.connect = op_connect,
	.container = op_container,
	.removed = op_removed,
	.synced = op_synced,
};

static int on_nri_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_nri_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* The loop's sources after each of the plugin's turns: its socket (a new
 * one after a reconnect), writability while answers wait, its timer. */
static void sync_sources(struct manager *m)
{
	struct wbg_nri_stats st;
	uint64_t deadline = nri_deadline(m->nri);
	int fd = nri_fd(m->nri), r = 0;

	nri_stats(m->nri, &st);
	if (fd != m->nri_fd || st.connections != m->nri_connection) {
		m->nri_io_source = sd_event_source_disable_unref(m->nri_io_source);
		m->nri_fd = fd;
		m->nri_connection = st.connections;
		if (fd >= 0)
			r = sd_event_add_io(m->event, &m->nri_io_source, fd, EPOLLIN, on_nri_io, m);
	}
	if (r >= 0 && m->nri_io_source)
		r = sd_event_source_set_io_events(m->nri_io_source, EPOLLIN | (nri_wants_write(m->nri) ? EPOLLOUT : 0));
	if (r < 0) {
		/* closed, tried again after the backoff (never a busy loop) */
		log_warning_errno(r, "NRI: cannot watch the socket");
		nri_reconnect(m->nri);
		m->nri_io_source = sd_event_source_disable_unref(m->nri_io_source);
		m->nri_fd = -EBADF;
		deadline = nri_deadline(m->nri);
	}
	if (deadline == UINT64_MAX) {
		if (m->nri_timer_source)
			(void)sd_event_source_set_enabled(m->nri_timer_source, SD_EVENT_OFF);
		return;
	}
	if (!m->nri_timer_source)
		r = sd_event_add_time(m->event, &m->nri_timer_source, CLOCK_MONOTONIC, deadline, 0, on_nri_timer, m);
	else {
		r = sd_event_source_set_time(m->nri_timer_source, deadline);
		if (r >= 0)
			r = sd_event_source_set_enabled(m->nri_timer_source, SD_EVENT_ONESHOT);
	}
	if (r < 0)
		log_warning_errno(r, "NRI: cannot arm its timer: no reconnect until wbguardd restarts");
}

static int on_nri_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	nri_io(m->nri, revents);
	sync_sources(m);
	return 0;
}

static int on_nri_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	nri_timer(m->nri);
	sync_sources(m);
	return 0;
}

int manager_nri_start(struct manager *m)
{
	char index[8];
	struct wbg_nri_params p = { .plugin_name = m->cfg.nri_plugin_name, .plugin_index = index };
	int r;

	m->nri_fd = -EBADF;
	if (!m->cfg.nri)
		return 0;
	snprintf(index, sizeof(index), "%02u", m->cfg.nri_plugin_index);
	r = nri_new(&p, &nri_ops, m, &m->nri);
	if (r < 0)
		return log_error_errno(r, "NRI: cannot set up the plugin");
	log_info("NRI: connecting to %s as %s-%s", m->cfg.nri_socket, index, m->cfg.nri_plugin_name);
	nri_start(m->nri);
	sync_sources(m);
	return 0;
}

void manager_nri_stop(struct manager *m)
{
	m->nri_io_source = sd_event_source_disable_unref(m->nri_io_source);
	m->nri_timer_source = sd_event_source_disable_unref(m->nri_timer_source);
	m->nri = nri_free(m->nri);
}

bool manager_nri_synced(const struct manager *m)
{
	return m->nri && nri_phase(m->nri) == NRI_READY;
}
#else
int manager_nri_start(struct manager *m)
{
	if (m->cfg.nri)
		log_info("NRI: this wbguardd is built without it ([nri] enable has no effect)");
	return 0;
}

void manager_nri_stop(struct manager *m)
{
}

bool manager_nri_synced(const struct manager *m)
{
	return false;
}
#endif
