/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguard-oci-hook: OCI runtime hook (createRuntime, poststop). */
#include <getopt.h>
#include <stdio.h>

#include "log.h"

static void help(void)
{
	printf("Usage: wbguard-oci-hook [OPTIONS] STAGE < STATE.json\n\n"
	       "OCI hook: reads the container state on stdin and tells wbguardd\n"
	       "about the container (createRuntime) or asks for its flush (poststop).\n\n"
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
			printf("wbguard-oci-hook %s\n", WBGUARD_VERSION);
			return 0;
		default:
			return 2;
		}
	}
	help();
	return 2;
}
