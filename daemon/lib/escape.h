/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cgroup names may hold any byte but '/' and NUL: what goes into logs and
 * metrics is escaped. */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
size_t utf8_len(const unsigned char *s);
/* s with control characters and bytes that are not UTF-8 as \xNN. */
void fputs_escaped(const char *s, FILE *f);
/* The same, allocated; NULL on ENOMEM. */
char *escape_dup(const char *s);
