/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lifecycle's flusher and kernel on a real host (lifecycle.h's
 * wbg_flusher_ops and wbg_kernel_ops): plans from the mount table, the
 * block devices and what BPF recorded; the flush pool; the scratch cycle;
 * memory.stat, cgroupfs and wb_stats; the state dir's pending records. And
 * the policy that turns the configuration and what this kernel offers into
 * the lifecycle's parameters. The daemon keeps only its clock and its
 * audience (event loop, bus, journal). */
#pragma once

#include <stdint.h>

#include "lifecycle.h"

struct blockdevs;
struct flush_pool;
struct wbg_bpf;
struct wbg_config;
struct wbg_mounts;
struct wbg_scratch;

/* Parts owned elsewhere, each NULL until it exists (pool, bpf, scratch);
 * the configuration is the daemon's, current across reloads. */
struct wbg_lifecycle_host {
	const struct wbg_config *cfg;
	const struct wbg_mounts *mounts;
	const struct blockdevs *bdevs;
	struct wbg_bpf *bpf;
	struct flush_pool *pool;
	const struct wbg_scratch *scratch;
	const char *debugfs; /* NULL: no wb_stats */
	uint64_t cleanup_seq; /* scratch cycles so far: each one's cgroup is new */
};

extern const struct wbg_flusher_ops lifecycle_host_flusher_ops;
extern const struct wbg_kernel_ops lifecycle_host_kernel_ops;

/* The lifecycle's parameters for cfg on this host: removals are watched
 * only where BPF can see the evidence and what each cgroup dirtied (bpf
 * may be NULL); the drain time from the sysctls under cfg->proc_sys. */
struct wbg_lifecycle_params lifecycle_host_params(const struct wbg_config *cfg, const struct wbg_bpf *bpf);

/* Without wb_stats a wb counts as drained after the kernel's own expiry
 * and one writeback interval, with room to spare (the sysctls under
 * proc_sys; their defaults when unreadable). */
uint64_t lifecycle_drain_after_usec(const char *proc_sys);
