/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsers for the values operators type: sizes, counts, durations,
 * switches, listen addresses. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct sockaddr_storage;

/* "512", "64K", "256M", "4G", "1T" (binary units, optional "iB"/"B"). */
int parse_size(const char *s, uint64_t *ret);
/* Plain unsigned decimal, no sign, no junk; the result must be <= max. */
int parse_u64_max(const char *s, uint64_t max, uint64_t *ret);
/* Non-negative decimal with an optional fraction ("2.5"). */
int parse_double(const char *s, double *ret);
/* 1, yes, true, on / 0, no, false, off (any case). */
int parse_bool(const char *v, bool *ret);
/* An unsigned in [min, max]: -ERANGE below min. */
int parse_uint(const char *v, unsigned min, unsigned max, unsigned *ret);
/* Seconds (a fraction allowed) in [min, max], as microseconds; a unit
 * (us, ms, cs, s, m or min, h) may follow the number: "500ms", "2m". */
int parse_seconds(const char *v, double min, double max, uint64_t *ret_usec);
/* "host:port" or "[v6]:port", numeric addresses only; ret may be NULL. */
int parse_listen(const char *v, struct sockaddr_storage *ret);
