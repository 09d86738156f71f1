/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configuration file parser (inih and our keys), through a memfd: the
 * same path config_load takes for /etc/wbguard/wbguard.conf. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wbg-config.h"
#include "fuzz.h"
#include "wbg-base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wbg_config c;
	char path[64];
	int fd = memfd_create("wbguard.conf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	log_set_max_level(-1); /* bad input is the point: keep the output quiet */
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		config_init(&c);
		(void)config_load(&c, path);
		config_done(&c);
	}
	close(fd);
	return 0;
}
