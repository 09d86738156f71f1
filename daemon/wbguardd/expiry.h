/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-pod dirty expiry and the handover boost, on the manager's loop: which
 * pods have a policy, their timers, their writeback jobs, and the holders
 * of vm.dirty_expire_centisecs (the sysctl keeper).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

struct manager;
struct wbg_cgroup;
struct wbg_handover;
struct flush_job;

int expiry_start(struct manager *m);
/* At exit: the admin's sysctl back, every pod forgotten. */
void expiry_stop(struct manager *m);
/* A cgroup got processes: resolve its policy (annotation, config, default). */
void expiry_cgroup_populated(struct manager *m, const struct wbg_cgroup *c);
/* The OCI hook registered the container in c: its annotations may ask for
 * an expiry. */
void expiry_container_registered(struct manager *m, const struct wbg_cgroup *c);
/* A cgroup lost its last process: a global pod's hold goes. */
void expiry_cgroup_emptied(struct manager *m, uint64_t cgroup_id);
/* A cgroup went away: its hold on the sysctl and its timers go. */
void expiry_cgroup_gone(struct manager *m, uint64_t cgroup_id);
/* BPF: an armed pod dirtied a page. */
void expiry_dirty_event(struct manager *m, uint64_t cgroup_id);
/* A flush job some pods waited on is done. */
void expiry_job_done(struct manager *m, const struct flush_job *j);
/* A handover ended: boost the sysctl if a flush of the cgroup's own data
 * did not end cleanly and the kernel has no dying-wb fallback. */
void expiry_handover_ended(struct manager *m, const struct wbg_handover *h);
void expiry_metrics(FILE *f, const struct manager *m);
