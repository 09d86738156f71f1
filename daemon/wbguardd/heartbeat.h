/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The event loop's heartbeat, for the threads that answer probes off it:
 * once a second the loop stores the time and whether it is ready, and a
 * listener's thread answers /livez and /readyz from those two atomics, so
 * that no peer, scrape or busy stretch of the loop delays a kubelet's
 * probe. A loop that has not beaten for stale_usec (30 s) is stuck:
 * /livez says so and fails.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#define WBG_BEAT_USEC (1000ULL * 1000)
#define WBG_BEAT_STALE_USEC (30ULL * 1000 * 1000)

struct wbg_heartbeat {
	sd_event_source *source;
	bool (*ready)(void *userdata);
	void *userdata;
	uint64_t stale_usec;
	/* written by the loop, read by the listeners' threads */
	_Atomic uint64_t beat_usec; /* CLOCK_MONOTONIC of the last beat */
	_Atomic bool is_ready;
};

/* Beats at once, then every WBG_BEAT_USEC on event. ready: whether the
 * daemon is up (its watches, BPF and verdicts: as sd_notify READY). */
int heartbeat_start(struct wbg_heartbeat *h, sd_event *event, bool (*ready)(void *userdata), void *userdata);
void heartbeat_stop(struct wbg_heartbeat *h);
/* A beat now (ready at start would otherwise be said a second late). */
void heartbeat_publish(struct wbg_heartbeat *h);
/* The answer to path from the last beat, for any thread: its HTTP status
 * (200 or 503) with its body in buf, and *ret_stale whether the loop is
 * stuck; 0 when path is neither /livez nor /readyz. A heartbeat never
 * started (h NULL, or no beat yet) answers as a stuck loop. */
unsigned heartbeat_answer(const struct wbg_heartbeat *h, const char *path, char *buf, size_t size, bool *ret_stale);
