/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CLOCK_MONOTONIC in seconds, and pacing against it, for the bench tools. */
#pragma once

double mono_now(void);
/* Sleeps until mono_now() >= t (at once if it already is); returns early
 * when a signal handler sets *stop. */
void mono_sleep_until(double t, volatile int *stop);
