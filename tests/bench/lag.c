/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>

#include "lag.h"

void lag_init(struct lag_tracker *t, double t0, double rate, double *per_sec, size_t n_sec)
{
	*t = (struct lag_tracker){ .t0 = t0, .rate = rate, .per_sec = per_sec, .n_sec = n_sec };
	for (size_t i = 0; i < n_sec; i++)
		per_sec[i] = 0;
}

double lag_next_due(const struct lag_tracker *t)
{
	return t->t0 + (double)t->written / t->rate;
}

static void note(struct lag_tracker *t, double at, double lag)
{
	double s = floor(at - t->t0);
	size_t i;

	if (lag < 0)
		lag = 0;
	if (lag > t->worst)
		t->worst = lag;
	if (s < 0)
		return;
	i = (size_t)s;
	if (i < t->n_sec && lag > t->per_sec[i])
		t->per_sec[i] = lag;
}

/* Lag grows while a write is blocked (nothing of it counts as written
 * yet): sample it at every second boundary it crosses, and at its end. */
static void blocked(struct lag_tracker *t, double start, double end)
{
	double due = lag_next_due(t);

	for (double b = floor(start - t->t0) + 1; t->t0 + b < end; b += 1)
		note(t, t->t0 + b - 1e-9, t->t0 + b - due);
}

void lag_record(struct lag_tracker *t, uint64_t len, double start, double end)
{
	blocked(t, start, end);
	t->written += len;
	note(t, end, end - lag_next_due(t));
}

void lag_stopped(struct lag_tracker *t, double start, double now)
{
	blocked(t, start, now);
	note(t, now, now - lag_next_due(t));
}

size_t lag_seconds(const struct lag_tracker *t, double now)
{
	double s = ceil(now - t->t0);

	if (s < 0)
		return 0;
	return (size_t)s < t->n_sec ? (size_t)s : t->n_sec;
}
