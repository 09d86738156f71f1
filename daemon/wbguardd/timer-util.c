/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <time.h>

#include "wbg-base.h"
#include "timer-util.h"

int timer_new_off(sd_event *event, sd_event_source **ret, uint64_t accuracy_usec, sd_event_time_handler_t cb,
		  void *userdata)
{
	sd_event_source *s = NULL;
	int r = sd_event_add_time(event, &s, CLOCK_MONOTONIC, 0, accuracy_usec, cb, userdata);

	if (r >= 0)
		r = sd_event_source_set_enabled(s, SD_EVENT_OFF);
	if (r < 0) {
		sd_event_source_disable_unref(s);
		return r;
	}
	*ret = s;
	return 0;
}

static int armed(sd_event_source *s)
{
	int enabled = SD_EVENT_OFF;

	return sd_event_source_get_enabled(s, &enabled) >= 0 && enabled != SD_EVENT_OFF;
}

static void arm(sd_event_source *s, uint64_t usec)
{
	if (sd_event_source_set_time(s, usec) < 0 || sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0)
		log_warning("Cannot arm a timer: what it was for waits for the next event");
}

void timer_arm_once(sd_event_source *s, uint64_t usec)
{
	if (s && !armed(s))
		arm(s, usec);
}

void timer_arm_by(sd_event_source *s, uint64_t usec)
{
	uint64_t t = 0;

	if (!s || (armed(s) && sd_event_source_get_time(s, &t) >= 0 && t <= usec))
		return;
	arm(s, usec);
}

uint64_t timer_realtime_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
