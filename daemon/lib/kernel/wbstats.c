/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "wbg-base.h"
#include "wbstats.h"

#define WB_HAS_DIRTY_IO_BIT 2 /* enum wb_state: WB_registered, WB_writeback_running, WB_has_dirty_io */

int wbstats_parse(const char *text, struct wbg_wb_stat **ret, size_t *ret_n)
{
	struct wbg_wb_stat *v = NULL, *cur = NULL;
	size_t n = 0;

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		char key[32];
		unsigned long long x;
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[128];
		int base = 10;

		snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
		p = nl ? nl + 1 : NULL;
		if (sscanf(line, "%31[^:]:", key) != 1)
			continue;
		if (strcmp(key, "state") == 0)
			base = 16;
		{
			const char *colon = strchr(line, ':'), *val;
			char *end;

			/* a key of 31 characters without its ':' (sscanf's
			 * count does not say the literal matched) */
			if (!colon)
				continue;
			val = colon + 1;
			errno = 0;
			x = strtoull(val, &end, base);
			if (errno || end == val)
				continue;
		}
		if (strcmp(key, "WbCgIno") == 0) {
			struct wbg_wb_stat *a = realloc(v, (n + 1) * sizeof(*a));

			if (!a) {
				free(v);
				return -ENOMEM;
			}
			v = a;
			cur = &v[n++];
			*cur = (struct wbg_wb_stat){ .cg_ino = x };
			continue;
		}
		if (!cur)
			continue;
		if (strcmp(key, "WbWriteback") == 0)
			cur->writeback_kb = x;
		else if (strcmp(key, "WbReclaimable") == 0)
			cur->reclaimable_kb = x;
		else if (strcmp(key, "b_dirty") == 0)
			cur->b_dirty = x;
		else if (strcmp(key, "b_io") == 0)
			cur->b_io = x;
		else if (strcmp(key, "b_more_io") == 0)
			cur->b_more_io = x;
		else if (strcmp(key, "b_dirty_time") == 0)
			cur->b_dirty_time = x;
		else if (strcmp(key, "state") == 0)
			cur->state = x;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

bool wb_stat_has_dirty_io(const struct wbg_wb_stat *s)
{
	return (s->state & (1ULL << WB_HAS_DIRTY_IO_BIT)) || s->b_dirty || s->b_io || s->b_more_io;
}

uint64_t wbstats_read_failures;

/* 64 MiB: about 100,000 wbs' entries (some 600 bytes each); the buffer
 * grows to what the file holds (read_small_fd). */
#define WB_STATS_MAX (64u << 20)

static uint64_t *sorted_ids(const struct wbg_dirty_wb *wbs, size_t n, bool dirty_only, size_t *ret_n)
{
	uint64_t *v = calloc(n + 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!dirty_only || wbs[i].dirty)
			v[k++] = wbs[i].cg_ino;
	qsort(v, k, sizeof(*v), cmp_leading_u64);
	*ret_n = k;
	return v;
}

int wbstats_census(const char *debugfs, struct wbg_wb_census *ret)
{
	_cleanup_free_ struct wbg_dirty_wb *wbs = NULL;
	struct wbg_wb_census c = { 0 };
	size_t n = 0;
	int r = wbstats_wbs(debugfs, NULL, true, &wbs, &n) /* ids only: no devices */;

	if (r < 0)
		return r;
	c.dirty = sorted_ids(wbs, n, true, &c.n_dirty);
	c.listed = sorted_ids(wbs, n, false, &c.n_listed);
	if (!c.dirty || !c.listed) {
		wbstats_census_done(&c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void wbstats_census_done(struct wbg_wb_census *c)
{
	free(c->dirty);
	free(c->listed);
	*c = (struct wbg_wb_census){ 0 };
}

bool wbstats_set_has(const uint64_t *set, size_t n, uint64_t cg_ino)
{
	return n && bsearch(&cg_ino, set, n, sizeof(*set), cmp_leading_u64);
}

/* .../bdi/<name>/wb_stats: a block device's bdi is named by its number, as
 * is an NFS mount's (its anonymous 0:N); btrfs' (btrfs-1...) by the table
 * of named bdis, when it has them; others give none. */
static bool bdi_dev(const char *path, const struct wbg_named_bdis *named, unsigned *ret_major, unsigned *ret_minor)
{
	const char *end = path + strlen(path) - strlen("/wb_stats"), *name = end;
	char bdi[WBG_BDI_NAME_MAX];
	dev_t dev;

	while (name > path && name[-1] != '/')
		name--;
	if ((size_t)(end - name) >= sizeof(bdi))
		return false;
	snprintf(bdi, sizeof(bdi), "%.*s", (int)(end - name), name);
	if (bdi_name_dev(named, bdi, &dev) < 0)
		return false;
	*ret_major = major(dev);
	*ret_minor = minor(dev);
	return true;
}

int wbstats_wbs(const char *debugfs, const struct wbg_named_bdis *named, bool all, struct wbg_dirty_wb **ret,
		size_t *ret_n)
{
	char pattern[PATH_MAX];
	glob_t g = { 0 };
	struct wbg_dirty_wb *out = NULL;
	size_t n_out = 0, cap = 0;
	bool any = false;
	int r = 0;

	snprintf(pattern, sizeof(pattern), "%s/bdi/*/wb_stats", debugfs);
	if (glob(pattern, 0, NULL, &g) != 0)
		return -ENOENT;
	for (size_t i = 0; i < g.gl_pathc && r >= 0; i++) {
		_cleanup_free_ char *text = NULL;
		_cleanup_free_ struct wbg_wb_stat *v = NULL;
		unsigned maj = 0, min = 0;
		bool has_dev;
		size_t n = 0;

		r = read_small_file_at(AT_FDCWD, g.gl_pathv[i], WB_STATS_MAX, &text);
		if (r == -ENOENT) { /* the bdi went away meanwhile */
			r = 0;
			continue;
		}
		/* A bdi that cannot be read (over WB_STATS_MAX, say) makes the
		 * whole answer unknown: skipped, its dirty wbs would read as
		 * drained. */
		if (r < 0 || (r = wbstats_parse(text, &v, &n)) < 0) {
			wbstats_read_failures++;
			log_debug_errno(r, "Cannot read %s: wb_stats unknown this time", g.gl_pathv[i]);
			break;
		}
		any = true;
		has_dev = bdi_dev(g.gl_pathv[i], named, &maj, &min);
		for (size_t k = 0; k < n; k++) {
			bool dirty = wb_stat_has_dirty_io(&v[k]);

			if (!dirty && !all)
				continue;
			if (n_out == cap) {
				struct wbg_dirty_wb *a = realloc(out, (cap = cap ? cap * 2 : 16) * sizeof(*a));

				if (!a) {
					r = -ENOMEM;
					break;
				}
				out = a;
			}
			out[n_out++] = (struct wbg_dirty_wb){ .cg_ino = v[k].cg_ino,
							     .dirty = dirty,
							     .dirty_bytes = (v[k].reclaimable_kb + v[k].writeback_kb) << 10,
							     .has_dev = has_dev,
							     .major = maj,
							     .minor = min };
		}
	}
	globfree(&g);
	if (r >= 0 && !any)
		r = -ENOENT;
	if (r < 0) {
		free(out);
		return r;
	}
	*ret = out;
	*ret_n = n_out;
	return 0;
}

int wbstats_dirty_wbs(const char *debugfs, const struct wbg_named_bdis *named, struct wbg_dirty_wb **ret,
		      size_t *ret_n)
{
	return wbstats_wbs(debugfs, named, false, ret, ret_n);
}

int wbstats_cgroup_clean(const char *debugfs, uint64_t cg_ino)
{
	struct wbg_wb_census c = { 0 };
	int r = wbstats_census(debugfs, &c);

	if (r < 0)
		return r;
	r = !wbstats_set_has(c.dirty, c.n_dirty, cg_ino);
	wbstats_census_done(&c);
	return r;
}
