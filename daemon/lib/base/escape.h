/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cgroup names may hold any byte but '/' and NUL: what goes into logs and
 * metrics is escaped. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
size_t utf8_len(const unsigned char *s);
/* s with control characters and bytes that are not UTF-8 as \xNN. */
void fputs_escaped(const char *s, FILE *f);
/* The same, allocated; NULL on ENOMEM. */
char *escape_dup(const char *s);
/* Only the bytes that are not UTF-8 escaped, as \xNN (json: as \\xNN,
 * which keeps a JSON text valid: the escape is inside a string), so that
 * D-Bus, which refuses invalid UTF-8, takes the string; NULL on ENOMEM. */
char *utf8_escape_dup(const char *s, bool json);
