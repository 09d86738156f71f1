/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-cgroup dirty expiry and the handover boost, on the daemon's loop:
 * which cgroups have a policy (dirty-expire), their timers, their
 * writeback jobs, and the holders of vm.dirty_expire_centisecs (the sysctl
 * keeper). Decisions on the policy itself are in expiry-policy.h.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "boost-limit.h"
#include "conf.h"
#include "sysctl-keeper.h"

struct flush_job;
struct flush_pool;
struct wbg_bpf;
struct wbg_cgroup;
struct wbg_containers;
struct wbg_handover;
struct wbg_host;
struct wbg_registry;
struct wbg_verdicts;

/* What it reads and uses of the daemon's other parts. */
struct wbg_expiry_deps {
	sd_event *event;
	const struct wbg_config *cfg; /* the daemon's, current across reloads */
	struct wbg_bpf *bpf;          /* NULL without BPF: no per-pod mechanism */
	struct flush_pool *pool;
	const struct wbg_registry *reg;
	struct wbg_containers *containers; /* names found in runtimes' state go here too */
	const struct wbg_host *host;       /* mounts and block devices, for plans */
	const struct wbg_verdicts *verdicts; /* no boost where the kernel has the fallback */
};

struct wbg_expiry {
	sd_event *event;
	const struct wbg_config *cfg;
	struct wbg_bpf *bpf;
	struct flush_pool *pool;
	const struct wbg_registry *reg;
	struct wbg_containers *containers;
	const struct wbg_host *host;
	const struct wbg_verdicts *verdicts;

	struct wbg_sysctl sysctl;
	bool sysctl_ok;   /* readable at start; else no global mechanism, no boost */
	void *cgroups;    /* tsearch tree of struct expiry_cgroup, by cgroup id */
	size_t n_policies[2]; /* by mechanism */
	sd_event_source *sysctl_check_source, *boost_source;
	uint64_t writebacks, policy_errors, unsupported, boosts;
	struct boost_limit boost_limit; /* per tenant */
};

int expiry_start(struct wbg_expiry *e, const struct wbg_expiry_deps *deps);
/* At exit: the admin's sysctl back, every cgroup forgotten. */
void expiry_stop(struct wbg_expiry *e);
/* A cgroup got processes: resolve its policy (annotation, config, default). */
void expiry_cgroup_populated(struct wbg_expiry *e, const struct wbg_cgroup *c);
/* The OCI hook registered the container in c: its annotations may ask for
 * an expiry. */
void expiry_container_registered(struct wbg_expiry *e, const struct wbg_cgroup *c);
/* A cgroup lost its last process: a global policy's hold goes. */
void expiry_cgroup_emptied(struct wbg_expiry *e, uint64_t cgroup_id);
/* A cgroup went away: its hold on the sysctl and its timers go. */
void expiry_cgroup_gone(struct wbg_expiry *e, uint64_t cgroup_id);
/* BPF: an armed cgroup dirtied a page. */
void expiry_dirty_event(struct wbg_expiry *e, uint64_t cgroup_id);
/* A flush job some cgroups' expiry waited on is done. */
void expiry_job_done(struct wbg_expiry *e, const struct flush_job *j);
/* A handover ended: boost the sysctl if a flush of the cgroup's own data
 * did not end cleanly and the kernel has no dying-wb fallback. */
void expiry_handover_ended(struct wbg_expiry *e, const struct wbg_handover *h);
/* The sysctl now, its admin's value and its holders (Status). */
const struct wbg_sysctl *expiry_sysctl(const struct wbg_expiry *e);
void expiry_metrics(FILE *f, const struct wbg_expiry *e);
