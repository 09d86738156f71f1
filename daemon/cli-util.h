/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Options every wbguard command takes. */
#pragma once

/* Handles -h/--help and --version. Returns 1 when one was given (the caller
 * exits 0), 0 when neither was and optind points at what follows, -EINVAL on
 * an unknown option (getopt has said so). */
int cli_help_version(int argc, char **argv, const char *name, void (*help)(void));
