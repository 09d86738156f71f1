/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguard-oci-hook: OCI runtime hook (createRuntime, poststop). */
#include <getopt.h>
#include <stdio.h>

#include "cli-util.h"
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
	int r = cli_help_version(argc, argv, "wbguard-oci-hook", help);

	if (r != 0)
		return r > 0 ? 0 : 2;
	help();
	return 2;
}
