/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "wbg-cgroup.h"
#include "lifecycle.h"
#include "wbg-base.h"
#include "pending.h"
#include "recovery.h"
#include "wbg-kernel.h"

int recover_pending(struct wbg_lifecycle *lc, const char *state_dir, uint64_t **ret_covered, size_t *ret_n)
{
	struct wbg_pending *v = NULL;
	uint64_t *covered;
	size_t n = 0, n_covered = 0;
	int r = pending_load(state_dir, &v, &n);

	if (r < 0)
		return r == -ENOMEM ? log_oom() : log_warning_errno(r, "Cannot read %s", state_dir);
	covered = calloc(n + 1, sizeof(*covered));
	if (!covered) {
		pending_free(v, n);
		free(v);
		return log_oom();
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		uint64_t id = 0;

		pending_drop(state_dir, v[i].id);
		r = lifecycle_recover(lc, v[i].cgroup_id, v[i].path, v[i].devs, v[i].bdev, v[i].n, &id);
		covered[n_covered++] = v[i].cgroup_id;
		log_notice("Handover %" PRIu64 " of %s was in flight when the previous wbguardd stopped; flushing its %zu "
			   "targets again as handover %" PRIu64,
			   v[i].id, v[i].path, v[i].n, id);
	}
	pending_free(v, n);
	free(v);
	if (n_covered)
		qsort(covered, n_covered, sizeof(*covered), cmp_leading_u64);
	*ret_covered = covered;
	*ret_n = n_covered;
	return r;
}

int recover_dying(struct wbg_lifecycle *lc, const char *debugfs, const struct wbg_named_bdis *named,
		  const char *cgroup_root, unsigned max_depth, const uint64_t *covered, size_t n_covered)
{
	_cleanup_free_ struct wbg_dirty_wb *wbs = NULL;
	_cleanup_free_ uint64_t *live = NULL;
	size_t n = 0, n_live = 0;
	int r = wbstats_dirty_wbs(debugfs, named, &wbs, &n);

	if (r == -ENOENT)
		return 0; /* no wb_stats: before 6.10, or no debugfs */
	if (r < 0)
		return r == -ENOMEM ? log_oom() : r;
	if (n == 0)
		return 0;
	r = cg_list_ids(cgroup_root, max_depth, &live, &n_live);
	if (r < 0)
		return r == -ENOMEM ? log_oom() : log_warning_errno(r, "Cannot list the cgroups under %s", cgroup_root);
	for (size_t i = 0; i < n; i++) {
		dev_t devs[8];
		bool bdev[8] = { false };
		size_t k = 0;
		uint64_t id = 0, cg = wbs[i].cg_ino;

		if (cg == 0 || wbstats_set_has(live, n_live, cg) || wbstats_set_has(covered, n_covered, cg))
			continue;
		/* every device of that cgroup with dirty IO, once */
		for (size_t j = i; j < n && k < ELEMENTSOF(devs); j++)
			if (wbs[j].cg_ino == cg && wbs[j].has_dev) {
				devs[k++] = makedev(wbs[j].major, wbs[j].minor);
				wbs[j].cg_ino = 0; /* taken */
			}
		if (k == 0)
			continue; /* bdis not named by a device: nothing we can open */
		r = lifecycle_recover(lc, cg, "(removed while not watching)", devs, bdev, k, &id);
		if (r < 0)
			return r;
		log_notice("A dying cgroup (id %" PRIu64 ") still has dirty data on %zu device(s); flushing it as handover "
			   "%" PRIu64, cg, k, id);
	}
	return 0;
}
