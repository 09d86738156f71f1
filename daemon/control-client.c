/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "control-client.h"
#include "macro.h"

int control_connect(const char *socket_path, sd_bus **ret)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	char addr[4200];
	int r;

	snprintf(addr, sizeof(addr), "unix:path=%s", socket_path);
	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_address(bus, addr);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(bus);
	return 0;
}
