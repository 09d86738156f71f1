/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-cgroup dirty expiry and the handover boost: which cgroups have a
 * policy (wbguard.io/dirty-expire, [policy], [expiry] default; the policy
 * itself in expiry-policy.h), their timers, their writeback rounds, and the
 * holders of vm.dirty_expire_centisecs (the sysctl keeper).
 *
 * Per-pod: BPF says when a pod dirties a page (one event per arming); one
 * expiry later its own inodes are written back, and the next round starts
 * when it dirties again. Global: while the pod is live it holds the sysctl
 * at its expiry (the lowest holder wins). The boost: a handover whose own
 * flush failed holds it at [expiry] boost for the boost window,
 * rate-limited per tenant (boost-limit.h).
 *
 * The decisions live here; the world (the clock and the one timer, what a
 * cgroup's path, unit and container annotation are, BPF arming, the pool's
 * writeback, memory.stat) is reached through wbg_expiry_ops, so unit tests
 * drive every transition with fakes.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "wbg-kernel.h"
#include "wbg-config.h"

struct flush_job;
struct wbg_handover;

#define EXPIRY_SYSCTL_CHECK_USEC (5ULL * 1000 * 1000) /* /proc/sys cannot be watched */
#define EXPIRY_RESOLVE_RETRY_USEC (500ULL * 1000)
#define EXPIRY_RESOLVE_RETRIES 4

/* What the policy of a cgroup depends on. */
struct wbg_expiry_subject {
	char path[PATH_MAX]; /* relative to the cgroupfs root */
	char unit[256];
	bool container;      /* a container: registered by the hook, or found in its runtime's state */
	bool has_annotation;
	char annotation[64]; /* its wbguard.io/dirty-expire */
	char container_id[128], runtime[16]; /* for the log */
	bool runtimes_present; /* a runtime keeps containers on this host (its state may come later) */
};

struct wbg_expiry_ops {
	uint64_t (*now)(void *userdata); /* CLOCK_MONOTONIC, usec */
	/* Call expiry_tick() at usec, or sooner. */
	void (*schedule)(void *userdata, uint64_t usec);
	/* The cgroup's subject; -ENOENT: not tracked (gone). */
	int (*lookup)(void *userdata, uint64_t cgroup_id, struct wbg_expiry_subject *ret);
	/* BPF: one event at the cgroup's next dirtying (expiry_dirty_event);
	 * forget: no more. -EOPNOTSUPP: no BPF here. */
	int (*arm)(void *userdata, uint64_t cgroup_id);
	void (*forget)(void *userdata, uint64_t cgroup_id);
	/* Start writing back the cgroup's own inodes (its filesystems only,
	 * no block device's page cache): the jobs started, each followed by
	 * expiry_job_done(). */
	int (*writeback)(void *userdata, uint64_t cgroup_id, const char *path);
	/* memory.stat file_dirty of a live cgroup. */
	int (*read_dirty)(void *userdata, const char *path, uint64_t *ret);
	/* Whether the kernel has the dying-wb fallback (then no boost). */
	bool (*fallback_active)(void *userdata);
};

struct expiry_cgroup;

/* What expiry takes from the configuration. */
struct wbg_expiry_params {
	struct wbg_expiry_rules rules; /* the policies ([policy], [expiry]) */
	unsigned boost_cs;             /* [expiry] boost: the sysctl after a failed flush; 0: none */
	uint64_t boost_window_usec;    /* ... for this long */
	bool flush;                    /* [flush] enable: only a handover's own flush is backed by a boost */
};

struct wbg_expiry {
	struct wbg_expiry_params params; /* the current configuration's (expiry_reload) */
	const struct wbg_expiry_ops *ops;
	void *userdata;

	struct wbg_sysctl sysctl;
	bool sysctl_ok;   /* readable at start; else no global mechanism, no boost */
	void *cgroups;    /* tsearch tree of struct expiry_cgroup, by cgroup id */
	/* their timers, soonest first (a binary heap) */
	struct expiry_cgroup **due;
	size_t n_due, due_cap;
	size_t n_policies[2]; /* by mechanism */
	uint64_t sysctl_check_due, boost_due;
	uint64_t writebacks, policy_errors, unsupported, boosts;
	struct boost_limit boost_limit; /* per tenant */
};

/* The sysctl keeper opened on proc_sys and state_dir (an admin's value a
 * crash left lowered is restored first). Never fails: without the sysctl,
 * per-pod expiry still runs. */
void expiry_start(struct wbg_expiry *e, const struct wbg_expiry_params *p, const char *proc_sys,
		  const char *state_dir, const struct wbg_expiry_ops *ops, void *userdata);
/* At exit: the admin's sysctl back, every cgroup forgotten. */
void expiry_stop(struct wbg_expiry *e);
/* A cgroup got processes: resolve its policy (annotation, config, default). */
void expiry_cgroup_populated(struct wbg_expiry *e, uint64_t cgroup_id, bool in_scope);
/* The OCI hook registered the container in it: its annotations may ask for
 * an expiry. populated: whether it has processes. */
void expiry_container_registered(struct wbg_expiry *e, uint64_t cgroup_id, bool in_scope, bool populated);
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
/* Timers that are due (ops->schedule said when). */
void expiry_tick(struct wbg_expiry *e);
/* After a reload, with the new configuration's p: every known cgroup's policy
 * resolved again, so a policy removed or changed releases or re-holds the
 * sysctl at once. Cgroups without a policy are not known here: a new
 * policy applies to them from their next population or registration. */
void expiry_reload(struct wbg_expiry *e, const struct wbg_expiry_params *p);
/* The sysctl now, its admin's value and its holders (Status). */
const struct wbg_sysctl *expiry_sysctl(const struct wbg_expiry *e);
void expiry_metrics(FILE *f, const struct wbg_expiry *e);
