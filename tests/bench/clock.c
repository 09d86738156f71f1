/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <time.h>

#include "clock.h"

double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void mono_sleep_until(double t, volatile int *stop)
{
	double d = t - mono_now();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !(stop && *stop))
		;
}
