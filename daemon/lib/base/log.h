/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging: to stderr, with sd-daemon's "<N>" level prefixes when stderr is
 * the journal (JOURNAL_STREAM matches), so journald keeps the level, and
 * the level's word ("warning: ...") when it is not. The
 * *_errno variants return -abs(error), so a function can log and return in one
 * statement.
 */
#pragma once

#include <stdlib.h>
#include <syslog.h>

void log_set_max_level(int level);
int log_get_max_level(void);
/* Whether stderr is the journal's stream (then structured fields can go
 * to the journal directly). */
int log_to_journal(void);
/* emerg ... debug, as [daemon] log_level names them: the word on each
 * line that does not go to the journal. */
const char *log_level_to_string(int level);
int log_internal(int level, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_full_errno(level, error, ...) log_internal(level, error, __VA_ARGS__)
/* A debug line costs this test alone while debug is off: its arguments
 * (names looked up, strings made) are not evaluated. */
#define log_debug(...) (void)(log_get_max_level() >= LOG_DEBUG && log_internal(LOG_DEBUG, 0, __VA_ARGS__))
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) \
	(log_get_max_level() >= LOG_DEBUG ? log_internal(LOG_DEBUG, e, __VA_ARGS__) : -abs(e))
#define log_info_errno(e, ...) log_internal(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, e, __VA_ARGS__)
#define log_oom() log_internal(LOG_ERR, ENOMEM, "Out of memory")
