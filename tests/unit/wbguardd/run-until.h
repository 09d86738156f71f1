/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The server's loop run while a child (a client) does its part. */
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>

/* Runs the loop until child c exits; its exit status, -1 on a timeout
 * (the child then killed). */
static inline int run_until(sd_event *e, pid_t c, int max_ms)
{
	int st;

	for (int t = 0; t < max_ms; t += 10) {
		if (waitpid(c, &st, WNOHANG) == c)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		(void)sd_event_run(e, 10 * 1000);
	}
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	return -1;
}
