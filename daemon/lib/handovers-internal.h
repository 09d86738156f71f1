/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Between the files of the handover lifecycle (handovers.h) only. */
#pragma once

#include "handovers.h"

uint64_t hs_now(const struct wbg_handovers *hs);
struct wbg_handover *hs_find(const struct wbg_handovers *hs, uint64_t id);
/* The earliest deadline held, to ops->schedule; after every change. */
void hs_reschedule(struct wbg_handovers *hs);
struct wbg_handover *hs_start(struct wbg_handovers *hs, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger);
void hs_retire(struct wbg_handovers *hs, struct wbg_handover *h);
void hs_cleanup_and_verify(struct wbg_handovers *hs, struct wbg_handover *h);
int hs_submit(struct wbg_handovers *hs, struct wbg_handover *h, struct wbg_plan *plan);
int hs_flush(struct wbg_handovers *hs, struct wbg_handover *h, bool inodes);

/* handovers-api.c */
void hs_reply_waiters(struct wbg_handovers *hs, const struct wbg_handover *h);
void hs_remember(struct wbg_handovers *hs, const struct wbg_handover *h, const char *json);
uint64_t hs_waiters_next_due(const struct wbg_handovers *hs);
void hs_waiters_expire(struct wbg_handovers *hs, uint64_t now);

/* handovers-evidence.c */
void hs_dying_init(struct wbg_handovers *hs);
/* Watched (0), or a negative errno: the caller flushes it eagerly. */
int hs_dying_watch(struct wbg_handovers *hs, struct wbg_handover *h);
/* The handover's flush is over: true when the watch took it on. */
bool hs_dying_flushed(struct wbg_handovers *hs, struct wbg_handover *h);
