/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardd: keeps a replaced container's successor from stalling on the
 * dying cgroup's writeback. Options, host checks and the event loop. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static void help(void)
{
	printf("Usage: wbguardd [OPTIONS]\n\n"
	       "Watches cgroup removals and writes back what a removed cgroup left dirty,\n"
	       "so that writers in other cgroups never stall on its dying writeback.\n\n"
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
			printf("wbguardd %s\n", WBGUARD_VERSION);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		log_error("wbguardd takes no arguments ('%s')", argv[optind]);
		return 2;
	}
	log_error("wbguardd: the daemon loop is not built yet; see --help");
	return 1;
}
