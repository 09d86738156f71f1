/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "control-client.h"
#include "wbg-base.h"

uint64_t control_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int control_connect(const char *socket_path, uint64_t deadline, sd_bus **ret)
{
	_cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
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
	/* sd-bus would wait up to its 90 s authentication timeout for a
	 * peer that accepted but does not answer (stopped, or its loop
	 * blocked): drive the handshake ourselves, up to the deadline. */
	for (;;) {
		uint64_t now;

		r = sd_bus_is_ready(bus);
		if (r > 0)
			break;
		if (r < 0)
			return r;
		r = sd_bus_process(bus, NULL);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		now = control_now_usec();
		if (now >= deadline)
			return -ETIMEDOUT;
		r = sd_bus_wait(bus, deadline - now);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(bus);
	return 0;
}

int control_call(sd_bus *bus, sd_bus_message *m, uint64_t deadline, sd_bus_error *error, sd_bus_message **ret_reply)
{
	uint64_t now = control_now_usec();

	if (now >= deadline)
		return -ETIMEDOUT;
	return sd_bus_call(bus, m, deadline - now, error, ret_reply);
}
