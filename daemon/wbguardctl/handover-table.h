/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `wbguardctl handovers` as a table: a handover record (the JSON wbguardd
 * keeps, which --json prints unchanged) made into one row an operator reads:
 * when it ended and how long ago, sizes in IEC units. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct json_object;

struct handover_row {
	char id[24], trigger[24], outcome[24];
	char dirty[16], written[16]; /* "12.3 MiB"; "-": not known */
	char ended[24];              /* local "YYYY-MM-DD HH:MM:SS"; "-": still running or another boot's */
	char age[16];                /* "42s", "3m04s", "2h05m", "3d04h"; "-" as ended */
	char who[256];               /* namespace/pod/container, "-" where not registered */
	char cgroup[512];
};

/* "512 B", "4.0 KiB", "12.3 MiB"... into buf (at least 16 bytes). */
void format_iec_bytes(uint64_t bytes, char *buf, size_t size);
/* "42s", "3m04s", "2h05m", "3d04h" into buf (at least 16 bytes). */
void format_age(uint64_t usec, char *buf, size_t size);
/* The row of record rec, seen at now_mono (CLOCK_MONOTONIC, us) and now_real:
 * the record's clock is the same boot's CLOCK_MONOTONIC (trigger_monotonic_us
 * + ended_s). -EINVAL: rec is no handover record (no id). */
int handover_row_make(struct json_object *rec, uint64_t now_mono, time_t now_real, struct handover_row *ret);
