/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardctl: the command line for wbguardd. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli-util.h"
#include "log.h"

static void help(void)
{
	printf("Usage: wbguardctl [OPTIONS] COMMAND\n\n"
	       "Inspect and drive wbguardd.\n\n"
	       "  -h --help       show this help\n"
	       "     --version    show the version\n");
}

int main(int argc, char **argv)
{
	int r = cli_help_version(argc, argv, "wbguardctl", help);

	if (r != 0)
		return r > 0 ? 0 : 2;
	if (optind < argc) {
		log_error("Unknown command '%s'; see --help", argv[optind]);
		return 2;
	}
	help();
	return 0;
}
