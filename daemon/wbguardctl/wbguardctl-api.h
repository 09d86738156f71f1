/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbguardctl's commands that ask the running wbguardd (its control API). */
#pragma once

/* wbguardd not reachable, or not ours to ask (root only); status: not running */
#define EXIT_UNREACHABLE 3

#include <stdbool.h>

struct json_object;

struct ctl_opts {
	const char *socket; /* the control socket; NULL: the system bus */
	bool json;
	double timeout;
	/* list, flush: the registered containers' names, as crictl takes
	 * them (NULL: any) */
	const char *pod, *namespace, *container;
};

/* Each returns the command's exit status (see wbguardctl --help). */
int ctl_list(const struct ctl_opts *o);
/* cgroup NULL: the cgroups the names select (a pod's own cgroup, else its
 * containers'). */
int ctl_flush(const struct ctl_opts *o, const char *cgroup, bool wait);
int ctl_handovers(const struct ctl_opts *o, unsigned limit);
int ctl_metrics(const struct ctl_opts *o);
int ctl_reload(const struct ctl_opts *o);
/* Whether wbguardd's loop answers within timeout_sec: 0, else 3. */
int ctl_ping(const struct ctl_opts *o, unsigned timeout_sec);
/* The daemon's status as a JSON object, or NULL if it is not reachable
 * (logged at debug level). */
struct json_object *ctl_daemon_status(const struct ctl_opts *o);
