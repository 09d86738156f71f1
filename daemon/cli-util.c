/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "cli-util.h"

int cli_help_version(int argc, char **argv, const char *name, void (*help)(void))
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
			return 1;
		case 'V':
			printf("%s %s\n", name, WBGUARD_VERSION);
			return 1;
		default:
			return -EINVAL;
		}
	}
	return 0;
}
