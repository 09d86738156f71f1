/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The handovers in progress: by id, how many per cgroup (a stall's
 * "covered?" in O(log n)), and a ring of the cgroups whose handover ended
 * lately (the rmdir tracepoint's duplicates of inotify's news). */
#include <search.h>
#include <stdlib.h>

#include "lifecycle-internal.h"
#include "log.h"
#include "macro.h"

struct active_cgroup {
	uint64_t cgroup_id; /* first: cmp_leading_u64 */
	unsigned n;
};

/* The per-cgroup count of handovers in progress; an entry goes with its
 * last one. (No memory for a new entry: that cgroup's stall reports are
 * then taken as uncovered, and the one-per-cgroup bound in BPF still
 * holds.) */
static void active_cgroup_count(struct wbg_lifecycle *hs, uint64_t cgroup_id, int delta)
{
	struct active_cgroup key = { .cgroup_id = cgroup_id }, **f = tfind(&key, &hs->active_cgroups, cmp_leading_u64), *e;

	if (!f && delta > 0) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->cgroup_id = cgroup_id;
		f = tsearch(e, &hs->active_cgroups, cmp_leading_u64);
		if (!f || *f != e) {
			free(e);
			return;
		}
	}
	if (!f)
		return;
	e = *f;
	if (delta > 0)
		e->n++;
	else if (e->n && --e->n == 0) {
		tdelete(e, &hs->active_cgroups, cmp_leading_u64);
		free(e);
	}
}

bool lifecycle_cgroup_active(const struct wbg_lifecycle *hs, uint64_t cgroup_id)
{
	struct active_cgroup key = { .cgroup_id = cgroup_id };

	return tfind(&key, &hs->active_cgroups, cmp_leading_u64) != NULL;
}

struct wbg_handover *hs_find(const struct wbg_lifecycle *hs, uint64_t id)
{
	struct wbg_handover key = { .id = id }, **f = tfind(&key, &hs->active, cmp_leading_u64);

	return f ? *f : NULL;
}

const struct wbg_handover *lifecycle_find(const struct wbg_lifecycle *hs, uint64_t id)
{
	return hs_find(hs, id);
}

struct wbg_handover *hs_start(struct wbg_lifecycle *hs, uint64_t cgroup_id, const char *path, enum wbg_trigger trigger)
{
	struct wbg_handover *h = handover_new(ids_next(&hs->ids), cgroup_id, path, trigger, hs_now(hs));

	if (!h || !tsearch(h, &hs->active, cmp_leading_u64)) {
		handover_free(h);
		log_oom();
		return NULL;
	}
	hs->n_active++;
	active_cgroup_count(hs, cgroup_id, +1);
	return h;
}

bool hs_finish(struct wbg_lifecycle *hs, struct wbg_handover *h)
{
	if (!tdelete(h, &hs->active, cmp_leading_u64))
		return false;
	hs->n_active--;
	active_cgroup_count(hs, h->cgroup_id, -1);
	hs->ended_ids[hs->ended_next++ % ELEMENTSOF(hs->ended_ids)] = h->cgroup_id;
	return true;
}

bool lifecycle_recently_started(const struct wbg_lifecycle *hs, uint64_t cgroup_id)
{
	if (lifecycle_cgroup_active(hs, cgroup_id))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(hs->ended_ids); i++)
		if (hs->ended_ids[i] == cgroup_id)
			return true;
	return false;
}
