/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Between the files of the handover lifecycle (lifecycle.h) only. */
#pragma once

#include "lifecycle.h"

uint64_t hs_now(const struct wbg_lifecycle *hs);
struct wbg_handover *hs_find(const struct wbg_lifecycle *hs, uint64_t id);
/* The earliest deadline held, to ops->schedule; after every change. */
void hs_reschedule(struct wbg_lifecycle *hs);
struct wbg_handover *hs_start(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger);
/* The one way a handover's phase changes: handover_step()'s answer to
 * event, carried out. plan: what WBG_ACT_SUBMIT and WBG_ACT_SAVE_PENDING
 * take (the event's). h may be freed when it returns. */
void hs_step(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event, struct wbg_plan *plan);

/* lifecycle-api.c */
void hs_reply_waiters(struct wbg_lifecycle *hs, const struct wbg_handover *h, const char *outcome);
void hs_remember(struct wbg_lifecycle *hs, const struct wbg_handover *h, const char *json);
uint64_t hs_waiters_next_due(const struct wbg_lifecycle *hs);
void hs_waiters_expire(struct wbg_lifecycle *hs, uint64_t now);

/* lifecycle-watch.c: the watch table. */
/* Watched (0); -ENOSPC: the table is full (counted). */
int hs_watch_add(struct wbg_lifecycle *hs, struct wbg_handover *h);
/* Out of the table, its end counted by how the event ended it. */
void hs_watch_remove(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event);
/* Its outcome, at its end, from how the watch went. */
void hs_watch_outcome(struct wbg_lifecycle *hs, struct wbg_handover *h, enum wbg_event event);
/* The watch's next look at usec, or sooner. */
void hs_watch_at(struct wbg_lifecycle *hs, uint64_t usec);
/* Drains, max ages and evidence due: the events they are. */
void hs_watch_tick(struct wbg_lifecycle *hs, uint64_t now);
/* Re-arms the capped stalls whose time has come (lifecycle-stall.c). */
void hs_stall_retry(struct wbg_lifecycle *hs, uint64_t now);
/* After the verify batch's wb_stats read (known: it could say; dirty:
 * whether a dying wb of h is): the event that follows. */
enum wbg_event hs_watch_verified(struct wbg_lifecycle *hs, struct wbg_handover *h, bool known, bool dirty,
				 uint64_t now);
