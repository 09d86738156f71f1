/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lag.h"
#include "tap.h"

int main(void)
{
	double per_sec[10];
	struct lag_tracker t;
	const double mib = 1 << 20;

	/* 1 MiB/s; writes of 0.25 MiB on schedule never lag. */
	lag_init(&t, 100.0, mib, per_sec, 10);
	for (int i = 0; i < 8; i++) {
		double due = lag_next_due(&t);
		CHECK_NEAR(due, 100.0 + i * 0.25, 1e-9, "write %d due on schedule", i);
		lag_record(&t, mib / 4, due, due + 0.01);
	}
	CHECK_NEAR(t.worst, 0, 1e-9, "on schedule: no lag");

	/* The next write (due at 102.0) blocks until 105.5: lag climbs 1, 2,
	 * 3 at the second boundaries it crosses; once its 0.25 s worth of data
	 * counts, the writer ends 3.25 s behind. */
	lag_record(&t, mib / 4, 102.0, 105.5);
	CHECK_NEAR(per_sec[2], 1.0, 1e-6, "second 2 ends 1 s behind");
	CHECK_NEAR(per_sec[3], 2.0, 1e-6, "second 3 ends 2 s behind");
	CHECK_NEAR(per_sec[4], 3.0, 1e-6, "second 4 ends 3 s behind");
	CHECK_NEAR(per_sec[5], 3.25, 1e-6, "second 5: the write ends 3.25 s behind");
	CHECK_NEAR(t.worst, 3.25, 1e-6, "worst lag is the blocked write");

	/* Catching up: writes back to back shrink the lag. */
	lag_record(&t, mib, 105.5, 105.6);
	CHECK(lag_next_due(&t) < 105.6, "still behind after catching up one MiB");
	CHECK_NEAR(t.worst, 3.25, 1e-6, "worst lag is kept");
	CHECK(lag_seconds(&t, 105.6) == 6, "six seconds covered");
	CHECK(lag_seconds(&t, 500) == 10, "seconds covered are bounded by the array");

	/* A writer stopped while a write is blocked (its deadline passed in
	 * balance_dirty_pages): the lag counts up to the stop, the write's
	 * bytes do not. */
	lag_init(&t, 0.0, mib, per_sec, 10);
	lag_record(&t, mib, 0.0, 0.1);
	lag_stopped(&t, 1.0, 4.5);
	CHECK_NEAR(per_sec[2], 2.0, 1e-6, "stopped: second 2 ends 2 s behind");
	CHECK_NEAR(per_sec[4], 3.5, 1e-6, "stopped: the stop is 3.5 s behind");
	CHECK_NEAR(t.worst, 3.5, 1e-6, "stopped: worst lag is at the stop");
	CHECK(t.written == (uint64_t)mib, "stopped: the blocked write's bytes do not count");
	return tap_done();
}
