/* SPDX-License-Identifier: GPL-2.0-or-later */
/* [flush] mode = on-evidence in the manager: the dying-wb table (dying.h)
 * wired to BPF, the flush pool, the scratch cycle and wb_stats. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct manager;
struct wbg_handover;
struct wbg_rmdir_event;

/* Sets up the table and its timer; says which mode is in effect (and why
 * on-evidence is not, when it was asked for). */
int manager_dying_start(struct manager *m);
/* Whether removals are watched rather than flushed (the configuration
 * asks for it and BPF can see the evidence). */
bool manager_dying_on_evidence(const struct manager *m);
/* A removed cgroup with dirty data of its own: watched. A negative errno
 * (the table full, out of memory): the caller flushes it eagerly. */
int manager_dying_watch(struct manager *m, struct wbg_handover *h);
bool manager_dying_holds(const struct manager *m, uint64_t cgroup_id);
/* The handover's flush is over: true when the table took it on (then the
 * cleanup and the check follow from there). */
bool manager_dying_flushed(struct manager *m, struct wbg_handover *h);
void manager_dying_evidence(struct manager *m, const struct wbg_rmdir_event *e);
void manager_dying_release(struct manager *m, uint64_t cgroup_id);
/* Ends every watched handover as interrupted (wbguardd stopping). */
void manager_dying_stop(struct manager *m);
void manager_dying_metrics(FILE *f, const struct manager *m);

/* From manager.c: the end of a handover, and its flush started now. */
void manager_retire(struct manager *m, struct wbg_handover *h);
/* inodes: the inodes BPF recorded for it, where the set is complete (a
 * replacement's evidence), rather than whole filesystems. */
int manager_flush_handover(struct manager *m, struct wbg_handover *h, bool inodes);
