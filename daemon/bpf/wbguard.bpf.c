// SPDX-License-Identifier: GPL-2.0
/*
 * The object's license and the two sinks every unit writes: the exact
 * node-wide counters and the event ring (their layouts in wbguard-bpf.h).
 *
 * wbguardd's BPF object is this unit and one per concern, compiled apart
 * and linked into one (daemon/bpf/meson.build):
 *   foreign-flush.bpf.c  cgroup_writeback_by_id() results, the stall
 *                        report, the dying-wb watch
 *   dirtied.bpf.c        what each cgroup dirtied: devices and inodes
 *   expiry.bpf.c         per-pod expiry's per-folio program
 *   kernel-paths.bpf.c   the kernel's own foreign-flush and fallback paths
 *                        (and the dying-wb evidence of a foreign dirtying)
 *   pauses.bpf.c         balance_dirty_pages() pauses, wb switch storms
 *   lifecycle.bpf.c      cgroup rmdir and release
 */
#include "wbguard-bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct wbg_totals_map totals SEC(".maps");
struct wbg_event_ring_map event_ring SEC(".maps");
