/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

struct ctl_opts;

/* Where doctor looks, every root a parameter (tests pass temporary trees).
 * config: wbguardd's configuration (NULL: the file the running wbguardd
 * read, else the default); the other paths, when NULL, come from
 * it as wbguardd reads it: cgroup_root, state_dir, and the hook file at the
 * package's path on the node, below [daemon] host_root (in the DaemonSet's
 * pod, /proc/1/root: the node's files, not the image's). Given, each is
 * read as written. proc: the process table (other wbguardd processes). */
struct doctor_paths {
	const char *config;
	const char *cgroup_root;
	const char *state_dir;
	const char *hooks_file;
	const char *proc;
};

/* What this node has and lacks for wbguard (its configuration, cgroup v2
 * and memory, BTF, privileges, opening by handle, wbguardd and its
 * verdicts, the hook file and registrations, runtimes' state, inotify
 * limits), each gap with its next step. Reads only. Returns 1 if a check
 * failed, else 0. */
int doctor(const struct ctl_opts *co, const struct doctor_paths *p);
