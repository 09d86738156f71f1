/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How far a paced writer is behind its schedule. The writer owes rate bytes
 * per second from t0; at time x, having written w bytes, it is
 * x - t0 - w / rate seconds behind (0 when ahead). Each write is recorded
 * with its start and end, so a write that blocks for many seconds (asleep in
 * balance_dirty_pages) fills every second it spans.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct lag_tracker {
	double t0, rate;   /* schedule start (s) and rate (bytes/s) */
	uint64_t written;  /* bytes written so far */
	double *per_sec;   /* worst lag seen in each second since t0 */
	size_t n_sec;
	double worst;
};

void lag_init(struct lag_tracker *t, double t0, double rate, double *per_sec, size_t n_sec);
/* When the next write is due: the writer sleeps until then if early. */
double lag_next_due(const struct lag_tracker *t);
/* A write of len bytes ran from start to end (seconds, same clock as t0). */
void lag_record(struct lag_tracker *t, uint64_t len, double start, double end);
/* A write that began at start was still blocked at now, when the writer
 * was stopped: its lag counts up to now, its bytes do not. */
void lag_stopped(struct lag_tracker *t, double start, double now);
/* Seconds covered so far: per_sec[0 .. lag_seconds()-1] are meaningful. */
size_t lag_seconds(const struct lag_tracker *t, double now);
