/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wbg-base.h"
#include "heartbeat.h"

static uint64_t mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void heartbeat_publish(struct wbg_heartbeat *h)
{
	if (!h->source)
		return;
	atomic_store(&h->is_ready, h->ready ? h->ready(h->userdata) : true);
	atomic_store(&h->beat_usec, mono_usec());
}

static int on_beat(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct wbg_heartbeat *h = userdata;
	int r;

	heartbeat_publish(h);
	r = sd_event_source_set_time(s, usec + WBG_BEAT_USEC);
	if (r < 0)
		return log_error_errno(r, "Cannot re-arm the probes' heartbeat");
	return 0;
}

int heartbeat_start(struct wbg_heartbeat *h, sd_event *event, bool (*ready)(void *userdata), void *userdata)
{
	int r;

	*h = (struct wbg_heartbeat){ .ready = ready, .userdata = userdata, .stale_usec = WBG_BEAT_STALE_USEC };
	r = sd_event_add_time_relative(event, &h->source, CLOCK_MONOTONIC, WBG_BEAT_USEC, 0, on_beat, h);
	if (r < 0)
		return log_error_errno(r, "Cannot arm the probes' heartbeat");
	r = sd_event_source_set_enabled(h->source, SD_EVENT_ON);
	if (r < 0) {
		h->source = sd_event_source_disable_unref(h->source);
		return log_error_errno(r, "Cannot enable the probes' heartbeat");
	}
	heartbeat_publish(h);
	return 0;
}

void heartbeat_stop(struct wbg_heartbeat *h)
{
	h->source = sd_event_source_disable_unref(h->source);
}

unsigned heartbeat_answer(const struct wbg_heartbeat *h, const char *path, char *buf, size_t size, bool *ret_stale)
{
	uint64_t beat = h ? atomic_load(&h->beat_usec) : 0;
	uint64_t age = beat ? mono_usec() - beat : UINT64_MAX;
	bool fresh = beat && age < h->stale_usec;
	unsigned status = fresh ? 200 : 503;

	if (strcmp(path, "/livez") == 0) {
		if (fresh)
			snprintf(buf, size, "ok\n");
		else if (beat)
			snprintf(buf, size, "stuck: the event loop last beat %" PRIu64 " s ago\n", age / 1000000);
		else
			snprintf(buf, size, "stuck: the event loop has not beaten\n");
	} else if (strcmp(path, "/readyz") == 0) {
		bool ready = fresh && atomic_load(&h->is_ready);

		snprintf(buf, size, "%s\n", ready ? "ok" : fresh ? "starting" : "stuck");
		status = ready ? 200 : 503;
	} else
		return 0;
	*ret_stale = !fresh;
	return status;
}
