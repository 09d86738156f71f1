/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardctl: the command line for wbguardd. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

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
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case 'V':
			printf("wbguardctl %s\n", WBGUARD_VERSION);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		log_error("Unknown command '%s'; see --help", argv[optind]);
		return 2;
	}
	help();
	return 0;
}
