/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "host.h"
#include "wbg-base.h"
#include "wbg-metrics.h"

char *host_path(const struct wbg_host *h, const char *path)
{
	char *p;

	return asprintf(&p, "%s%s", h->root ? h->root : "", path) < 0 ? NULL : p;
}

/* Our mount table, or the host's (PID 1's) when we run in a container. */
static const char *mountinfo_path(const struct wbg_host *h)
{
	return h->root && h->root[0] ? "/proc/1/mountinfo" : "/proc/self/mountinfo";
}

static int reload_mounts(struct wbg_host *h)
{
	struct wbg_mounts n;
	int r = mountinfo_read(mountinfo_path(h), &n);

	if (r >= 0)
		r = mountinfo_prefix(&n, h->root);
	if (r < 0)
		return log_error_errno(r, "Cannot read %s", mountinfo_path(h));
	/* which disk each filesystem's writeback is named after: a stall or
	 * a wb_stats line names the disk of a partition's filesystem */
	if (mountinfo_resolve_bdis(&n, "/sys/dev/block") > 0)
		log_warning("Some filesystems' block devices could not be read in /sys/dev/block: a stall named by "
			    "their disk finds only filesystems on the disk itself");
	mountinfo_free(&h->mounts);
	h->mounts = n;
	/* btrfs names each filesystem's bdi "btrfs-N", and a stall or a
	 * wb_stats line names that: which mount it is, for each table */
	r = named_bdis_read("/sys/fs/btrfs", h->root, &h->mounts, &h->named);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "Cannot read /sys/fs/btrfs: a stall on a btrfs filesystem finds no filesystem to flush");
	if (h->named.dropped > 0 && h->named.dropped != h->dropped_said) /* said again when it changes */
		log_warning("More btrfs filesystems are mounted than the %d whose stalls wbguardd can name: %u left out",
			    WBG_NAMED_BDIS_MAX, h->named.dropped);
	h->dropped_said = h->named.dropped;
	return 0;
}

const struct wbg_named_bdis *host_named_bdis(const struct wbg_host *h)
{
	return &h->named;
}

void host_metrics(FILE *f, const struct wbg_host *h)
{
	metric_value(f, "wbguard_btrfs_bdis", "gauge",
		     "btrfs filesystems whose bdi (btrfs-N) wbguardd has matched to a mount, so that their stalls "
		     "and wb_stats name a filesystem to flush.",
		     (double)h->named.n);
	metric_value(f, "wbguard_btrfs_bdis_dropped", "gauge",
		     "btrfs filesystems mounted past the 64 whose bdis wbguardd names (logged): their stalls end "
		     "no-targets.",
		     (double)h->named.dropped);
}

/* The kernel flags mountinfo with POLLPRI when the table changes. */
static int on_mountinfo(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)reload_mounts(userdata);
	return 0;
}

/* Kernel uevents: block devices coming and going. */
static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct wbg_host *h = userdata;

	for (;;) {
		struct sockaddr_nl from = { 0 };
		unsigned char *buf = NULL;
		struct uevent u;
		int n = nl_recv(h->uevent_sock, &from, &buf, NULL);

		if (n <= 0) {
			free(buf);
			break; /* EAGAIN (nothing more) or an error: try next time */
		}
		/* Only the kernel (port 0) speaks on this group. */
		if (from.nl_pid == 0 && uevent_parse((const char *)buf, (size_t)n, &u) == 0 &&
		    blockdevs_apply(&h->bdevs, &u) > 0)
			log_debug("Block device %s %s (%d:%d)", u.devname ? u.devname : "?", u.action, u.major,
				  u.minor);
		free(buf);
	}
	return 0;
}

static int start_uevents(struct wbg_host *h, sd_event *event)
{
	_cleanup_free_ char *dev = host_path(h, "/dev");
	int r;

	if (!dev)
		return log_oom();
	r = blockdevs_init(&h->bdevs, "/sys/dev/block", dev);
	if (r < 0)
		log_warning_errno(r, "Cannot list block devices in /sys/dev/block");
	h->uevent_sock = nl_socket_alloc();
	if (!h->uevent_sock)
		return log_oom();
	nl_socket_disable_seq_check(h->uevent_sock);
	r = nl_connect(h->uevent_sock, NETLINK_KOBJECT_UEVENT);
	if (r < 0)
		return log_warning_errno(EPERM, "Cannot listen to kernel uevents: %s", nl_geterror(r));
	r = nl_socket_add_membership(h->uevent_sock, 1 /* the kernel's group */);
	if (r >= 0)
		r = nl_socket_set_nonblocking(h->uevent_sock);
	if (r < 0)
		return log_warning_errno(EPERM, "Cannot join the kernel uevent group: %s", nl_geterror(r));
	r = sd_event_add_io(event, &h->uevent_source, nl_socket_get_fd(h->uevent_sock), EPOLLIN, on_uevent, h);
	if (r < 0)
		return log_warning_errno(r, "Cannot watch uevents");
	return 0;
}

int host_start(struct wbg_host *h, sd_event *event, const char *host_root)
{
	int r;

	*h = (struct wbg_host){ .mountinfo_fd = -EBADF, .root = strdup(host_root) };
	if (!h->root)
		return log_oom();
	r = reload_mounts(h);
	if (r < 0)
		return r;
	h->mountinfo_fd = open(mountinfo_path(h), O_RDONLY | O_CLOEXEC);
	if (h->mountinfo_fd >= 0) {
		r = sd_event_add_io(event, &h->mountinfo_source, h->mountinfo_fd, EPOLLPRI, on_mountinfo, h);
		if (r < 0)
			log_warning_errno(r, "Cannot watch the mount table: mounts stay as found at start");
	}
	(void)start_uevents(h, event); /* without them, block devices stay as found at start */
	return 0;
}

void host_stop(struct wbg_host *h)
{
	h->mountinfo_source = sd_event_source_disable_unref(h->mountinfo_source);
	h->uevent_source = sd_event_source_disable_unref(h->uevent_source);
	nl_socket_free(h->uevent_sock);
	h->uevent_sock = NULL;
	blockdevs_done(&h->bdevs);
	mountinfo_free(&h->mounts);
	if (h->mountinfo_fd >= 0)
		close(h->mountinfo_fd);
	h->mountinfo_fd = -EBADF;
	free(h->root);
	h->root = NULL;
}
