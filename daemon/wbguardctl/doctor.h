/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

struct ctl_opts;

/* What this node has and lacks for wbguard (cgroup v2 and memory, BTF,
 * privileges, opening by handle, wbguardd and its verdicts, the hook file
 * and registrations, runtimes' state, inotify limits), each gap with its
 * next step. root: the cgroupfs; hooks_file: where the package puts the
 * OCI hook's file. Reads only. Returns 1 if a check failed, else 0. */
int doctor(const struct ctl_opts *co, const char *root, const char *hooks_file, const char *state_dir);
