/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One-shot sd-event timers that are created once, off, and armed when
 * something is due: an idle daemon has no wakeups. */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

/* A CLOCK_MONOTONIC timer, disabled until armed. */
int timer_new_off(sd_event *event, sd_event_source **ret, uint64_t accuracy_usec, sd_event_time_handler_t cb,
		  void *userdata);
/* Armed at usec, unless it is armed already (for whenever). */
void timer_arm_once(sd_event_source *s, uint64_t usec);
/* Armed at usec, or left as it is when armed for sooner. */
void timer_arm_by(sd_event_source *s, uint64_t usec);
/* The wall clock, usec since the epoch (for what a reader compares with
 * its own clock: the last reload's time). */
uint64_t timer_realtime_usec(void);
