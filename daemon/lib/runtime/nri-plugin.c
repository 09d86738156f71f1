/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nri-plugin.h"
#include "nri-pods-internal.h"
#include "nri-wire.h"
#include "nri-internal.h"
#include "nri.pb-c.h"
#include "ttrpc.pb-c.h"
#include "wbg-base.h"


int nri_new(const struct wbg_nri_params *params, const struct wbg_nri_ops *ops, void *userdata,
	    struct wbg_nri **ret)
{
	struct wbg_nri *n;

	if (strlen(params->plugin_name) >= sizeof(n->plugin_name) ||
	    strlen(params->plugin_index) >= sizeof(n->plugin_index))
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->ops = ops;
	n->userdata = userdata;
	snprintf(n->plugin_name, sizeof(n->plugin_name), "%s", params->plugin_name);
	snprintf(n->plugin_index, sizeof(n->plugin_index), "%s", params->plugin_index);
	n->fd = -1;
	n->deadline = UINT64_MAX;
	n->backoff_usec = WBG_NRI_BACKOFF_MIN_USEC;
	nri_wire_init(&n->wire);
	nri_out_init(&n->out, WBG_NRI_OUT_MAX);
	nri_pods_init(&n->pods);
	*ret = n;
	return 0;
}

static void close_connection(struct wbg_nri *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
	nri_wire_done(&n->wire);
	nri_out_done(&n->out);
	nri_pods_clear(&n->pods);
	n->registered = n->skipped_logged = false;
	n->sync_pods = n->sync_containers = 0;
	n->runtime[0] = 0;
}

struct wbg_nri *nri_free(struct wbg_nri *n)
{
	if (!n)
		return NULL;
	close_connection(n);
	free(n);
	return NULL;
}

/* Writes what it can of the output; -errno when the socket failed. */
static int flush_out(struct wbg_nri *n)
{
	while (n->fd >= 0 && n->out.len > 0) {
		ssize_t k = send(n->fd, n->out.buf, n->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		nri_out_consume(&n->out, (size_t)k);
	}
	return 0;
}

static void broken(struct wbg_nri *n, enum wbg_nri_error e, const char *why)
{
	n->stats.errors[e]++;
	log_notice("NRI: connection closed (%s): reconnecting in %.1f s", why, n->backoff_usec / 1e6);
	nri_step_event(n, NRI_EV_BROKEN);
}

void nri_step_event(struct wbg_nri *n, enum nri_event ev)
{
	bool more = true;

	while (more) {
		struct nri_step s = nri_phase_step(n->phase, ev);
		uint64_t now;
		int fd = -1, r;

		if (!s.valid)
			return;
		if (n->in_feed && (s.actions & NRI_DO_CLOSE)) {
			/* closing frees what the feed reads: after it */
			n->pending = PENDING_BROKEN;
			n->pending_error = WBG_NRI_ERR_PROTOCOL;
			snprintf(n->why, sizeof(n->why), "%s while a message was read", nri_event_to_string(ev));
			return;
		}
		log_debug("NRI: %s in %s -> %s", nri_event_to_string(ev), nri_phase_to_string(n->phase),
			  nri_phase_to_string(s.next));
		n->phase = s.next;
		more = false;
		now = n->ops->now(n->userdata);
		if (s.actions & NRI_DO_CLOSE)
			close_connection(n);
		if (s.actions & NRI_DO_DISARM)
			n->deadline = UINT64_MAX;
		if (s.actions & NRI_DO_ARM_NOW)
			n->deadline = now;
		if (s.actions & NRI_DO_SETUP)
			n->deadline = now + WBG_NRI_SETUP_USEC;
		if (s.actions & NRI_DO_BACKOFF) {
			n->deadline = now + n->backoff_usec;
			n->backoff_usec = n->backoff_usec * 2 > WBG_NRI_BACKOFF_MAX_USEC ? WBG_NRI_BACKOFF_MAX_USEC
											 : n->backoff_usec * 2;
		}
		if (s.actions & NRI_DO_SYNCED) {
			n->backoff_usec = WBG_NRI_BACKOFF_MIN_USEC;
			log_info("NRI: synchronized: %u pods, %u containers", n->sync_pods, n->sync_containers);
			if (n->ops->synced)
				n->ops->synced(n->userdata, n->sync_pods, n->sync_containers);
		}
		if (s.actions & NRI_DO_REGISTER) {
			r = nri_send_register(n);
			if (r >= 0)
				r = flush_out(n);
			if (r < 0) {
				n->stats.errors[WBG_NRI_ERR_WRITE]++;
				log_notice("NRI: RegisterPlugin could not be sent: %s", strerror(-r));
				ev = NRI_EV_BROKEN;
				more = true;
			}
		}
		if (s.actions & NRI_DO_CONNECT) {
			r = n->ops->connect(n->userdata, &fd);
			if (r < 0) {
				n->stats.errors[WBG_NRI_ERR_CONNECT]++;
				log_full_errno(n->connect_failing ? LOG_DEBUG : LOG_INFO, r,
					       "NRI: no runtime answers on the socket, trying again at most every %llu s",
					       WBG_NRI_BACKOFF_MAX_USEC / 1000000);
				n->connect_failing = true;
				ev = NRI_EV_CONNECT_FAILED;
			} else {
				n->fd = fd;
				n->connect_failing = false;
				n->stats.connections++;
				log_info("NRI: connected, registering as %s-%s", n->plugin_index, n->plugin_name);
				ev = NRI_EV_CONNECTED;
			}
			more = true;
		}
	}
}

/* The feed's callback: the message handled, then the phase stepped by
 * the fact it was (closing facts wait for the feed to stop). */
static int on_message(const struct nri_message *m, void *userdata)
{
	struct wbg_nri *n = userdata;
	enum nri_event ev = _NRI_EVENT_MAX;
	int r = nri_on_message(n, m, &ev);

	if (r >= 0 && ev != _NRI_EVENT_MAX)
		nri_step_event(n, ev);
	return r;
}

/* Reads and handles what the socket holds: 0, or -1 when the connection
 * ended (already stepped). */
static int read_some(struct wbg_nri *n)
{
	uint8_t buf[65536];

	for (unsigned i = 0; i < READS_PER_IO; i++) {
		ssize_t k = read(n->fd, buf, sizeof(buf));
		int r;

		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (k <= 0) {
			broken(n, WBG_NRI_ERR_HANGUP, k == 0 ? "the runtime closed it" : strerror(errno));
			return -1;
		}
		n->pending = PENDING_NONE;
		n->in_feed = true;
		r = nri_wire_feed(&n->wire, buf, (size_t)k, on_message, n);
		n->in_feed = false;
		if (r >= 0 && n->pending == PENDING_BROKEN)
			r = -ECANCELED;
		if (n->wire.skipped_frames && !n->skipped_logged) {
			n->skipped_logged = true;
			log_notice("NRI: frames for a multiplexer connection other than 1 and 2 skipped (a newer NRI?)");
		}
		if (r == -ECANCELED && n->pending == PENDING_SHUTDOWN) {
			(void)flush_out(n); /* Shutdown's answer, if the socket takes it */
			n->stats.events[WBG_NRI_SHUTDOWN]++;
			log_info("NRI: the runtime is shutting down: reconnecting in %.1f s", n->backoff_usec / 1e6);
			nri_step_event(n, NRI_EV_SHUTDOWN);
			return -1;
		}
		if (r < 0) {
			if (r == -EPROTO)
				broken(n, WBG_NRI_ERR_PROTOCOL, n->wire.error);
			else if (r == -ECANCELED)
				broken(n, n->pending_error, n->why);
			else
				broken(n, WBG_NRI_ERR_WRITE, strerror(-r));
			return -1;
		}
	}
	return 0;
}

void nri_io(struct wbg_nri *n, uint32_t revents)
{
	int r;

	if (n->fd < 0)
		return;
	if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && read_some(n) < 0)
		return;
	r = flush_out(n);
	if (r < 0)
		broken(n, WBG_NRI_ERR_WRITE, strerror(-r));
}

void nri_timer(struct wbg_nri *n)
{
	if (n->deadline == UINT64_MAX || n->ops->now(n->userdata) < n->deadline)
		return;
	n->deadline = UINT64_MAX;
	if (n->phase != NRI_WAITING) {
		n->stats.errors[WBG_NRI_ERR_TIMEOUT]++;
		log_notice("NRI: the runtime stopped answering while %s: reconnecting in %.1f s",
			   nri_phase_to_string(n->phase), n->backoff_usec / 1e6);
	}
	nri_step_event(n, NRI_EV_TIMER);
}

void nri_reconnect(struct wbg_nri *n)
{
	if (nri_phase_connected(n->phase))
		broken(n, WBG_NRI_ERR_HANGUP, "its socket could not be watched");
}

void nri_start(struct wbg_nri *n)
{
	nri_step_event(n, NRI_EV_START);
}

void nri_stop(struct wbg_nri *n)
{
	nri_step_event(n, NRI_EV_STOP);
}

int nri_fd(const struct wbg_nri *n)
{
	return n->fd;
}

bool nri_wants_write(const struct wbg_nri *n)
{
	return n->fd >= 0 && n->out.len > 0;
}

uint64_t nri_deadline(const struct wbg_nri *n)
{
	return n->deadline;
}

enum nri_phase nri_phase(const struct wbg_nri *n)
{
	return n->phase;
}

const char *nri_runtime(const struct wbg_nri *n)
{
	return n->runtime;
}

void nri_stats(const struct wbg_nri *n, struct wbg_nri_stats *ret)
{
	*ret = n->stats;
}

const char *nri_event_kind_to_string(enum wbg_nri_event_kind k)
{
	static const char *const s[_WBG_NRI_EVENT_KIND_MAX] = {
		[WBG_NRI_CONFIGURE] = "configure",
		[WBG_NRI_SYNCHRONIZE] = "synchronize",
		[WBG_NRI_RUN_POD_SANDBOX] = "run_pod_sandbox",
		[WBG_NRI_REMOVE_POD_SANDBOX] = "remove_pod_sandbox",
		[WBG_NRI_POST_CREATE_CONTAINER] = "post_create_container",
		[WBG_NRI_REMOVE_CONTAINER] = "remove_container",
		[WBG_NRI_SHUTDOWN] = "shutdown",
		[WBG_NRI_UNIMPLEMENTED] = "unimplemented",
	};
	return k < _WBG_NRI_EVENT_KIND_MAX ? s[k] : "?";
}

const char *nri_error_to_string(enum wbg_nri_error e)
{
	static const char *const s[_WBG_NRI_ERROR_MAX] = {
		[WBG_NRI_ERR_CONNECT] = "connect",
		[WBG_NRI_ERR_REFUSED] = "refused",
		[WBG_NRI_ERR_PROTOCOL] = "protocol",
		[WBG_NRI_ERR_TIMEOUT] = "timeout",
		[WBG_NRI_ERR_HANGUP] = "hangup",
		[WBG_NRI_ERR_WRITE] = "write",
		[WBG_NRI_ERR_TABLE_FULL] = "table_full",
		[WBG_NRI_ERR_TOO_BIG] = "too_big",
	};
	return e < _WBG_NRI_ERROR_MAX ? s[e] : "?";
}
