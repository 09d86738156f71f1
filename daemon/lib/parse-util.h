/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsers for the numbers operators type: sizes, counts, durations. */
#pragma once

#include <stdint.h>

/* "512", "64K", "256M", "4G", "1T" (binary units, optional "iB"/"B"). */
int parse_size(const char *s, uint64_t *ret);
/* Plain unsigned decimal, no sign, no junk; the result must be <= max. */
int parse_u64_max(const char *s, uint64_t max, uint64_t *ret);
/* Non-negative decimal with an optional fraction ("2.5"). */
int parse_double(const char *s, double *ret);
