/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One wbguardd per node. Two of them (the host's unit and the DaemonSet,
 * during a migration) would both hold the node's vm.dirty_expire_centisecs
 * and its state file, and the second would unlink the first's control
 * socket: the admin's value is then lost. So the first thing a daemon does
 * is take an open-file-description lock on <state_dir>/wbguardd.lock (the
 * unit and the DaemonSet share /run/wbguard; the kernel drops the lock when
 * the holder dies, kill -9 included) and write who it is into it. The
 * second finds it held, or a control socket that answers, and exits
 * naming the first, having touched neither. Readers (doctor) test the lock
 * without taking it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define WBG_NODE_LOCK_FILE "wbguardd.lock"
/* the last daemon refused, for doctor: one small file, overwritten */
#define WBG_NODE_REFUSED_FILE "refused-agent"

struct wbg_agent {
	pid_t pid;
	/* "pod NAMESPACE/NAME" (the DaemonSet's downward API), else
	 * "cgroup PATH" (a unit's: system.slice/wbguard.service) */
	char name[192];
	uint64_t since_realtime_usec;
};

/* Who this process is: POD_NAMESPACE/POD_NAME from the environment, else
 * its cgroup from <proc>/self/cgroup. */
void agent_self(const char *proc, struct wbg_agent *ret);
/* Takes the lock (the directory made if missing) and writes self into its
 * file. 0 with *ret_fd (keep it open for the daemon's life); -EBUSY with
 * *ret_holder when another holds it or answers on <state_dir>/control;
 * other errors: could not tell (the caller goes on, with a warning). */
int node_lock_take(const char *state_dir, const struct wbg_agent *self, int *ret_fd, struct wbg_agent *ret_holder);
/* The holder, without taking anything: 1 and *ret if held, 0 if not. */
int node_lock_holder(const char *state_dir, struct wbg_agent *ret);
/* A refused daemon's note (it touches nothing else); doctor reads it. */
int node_lock_note_refused(const char *state_dir, const struct wbg_agent *self, const struct wbg_agent *holder);
/* 0 and the refused agent, -ENOENT if none was. */
int node_lock_refused(const char *state_dir, struct wbg_agent *ret_refused);
