/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "wbg-kernel.h"
#include "wbg-base.h"
#include "series.h"
#include "timer-util.h"

/* A departed cgroup's per-cgroup series go (its retention is over, or it was
 * evicted from the departed table), and with its last report the names of
 * the container that was in it. */
static void drop_series(uint64_t id, void *userdata)
{
	struct wbg_series *s = userdata;
	const struct wbg_departed_entry *d = departed_find(&s->departed, id);

	/* the container's names went with its last report, unless its path
	 * is in use again */
	if (d && !registry_find_path(s->reg, d->path))
		containers_forget(s->containers, d->path);
	if (s->bpf)
		(void)wbg_bpf_drop_cgroup_series(s->bpf, id);
}

static uint64_t now_usec(const struct wbg_series *s)
{
	uint64_t t = 0;

	(void)sd_event_now(sd_event_source_get_event(s->timer), CLOCK_MONOTONIC, &t);
	return t;
}

/* Departed series whose retention is over go; the timer comes back for
 * the next one due. */
static int on_due(sd_event_source *source, uint64_t usec, void *userdata)
{
	struct wbg_series *s = userdata;
	uint64_t next = 0, now = now_usec(s), keep = s->retention_usec;

	(void)departed_drop_released(&s->departed, now > keep ? now - keep : 0, drop_series, s, &next);
	if (next)
		timer_arm_once(s->timer, next + keep);
	return 0;
}

int series_start(struct wbg_series *s, sd_event *event, uint64_t retention_usec, bool exported, struct wbg_bpf *bpf,
		 const struct wbg_registry *reg, struct wbg_containers *containers)
{
	int r;

	*s = (struct wbg_series){ .retention_usec = retention_usec, .exported = exported, .bpf = bpf, .reg = reg,
				  .containers = containers };
	r = departed_init(&s->departed, WBG_STATS_CGROUPS_MAX);
	if (r < 0)
		return log_oom();
	r = timer_new_off(event, &s->timer, 1000 * 1000, on_due, s);
	if (r < 0)
		return log_error_errno(r, "Cannot add the departed series' timer");
	return 0;
}

void series_stop(struct wbg_series *s)
{
	s->timer = sd_event_source_disable_unref(s->timer);
	departed_free(&s->departed);
}

void series_departed(struct wbg_series *s, uint64_t id, const char *path)
{
	uint64_t evicted = 0;

	if (departed_add(&s->departed, id, path, &evicted) == -ENOMEM)
		log_oom();
	if (evicted)
		drop_series(evicted, s);
}

/* Its series go after the retention (every scraper sees its final
 * values), or now when nothing reports them or we never knew its name. */
void series_released(struct wbg_series *s, uint64_t id)
{
	uint64_t now = now_usec(s);

	if (!departed_mark_released(&s->departed, id, now))
		drop_series(id, s);
	else if (!s->exported)
		(void)departed_drop_released(&s->departed, UINT64_MAX, drop_series, s, NULL);
	else
		timer_arm_once(s->timer, now + s->retention_usec);
}

bool series_cgroup_dying(const struct wbg_series *s, uint64_t id)
{
	const struct wbg_departed_entry *d = departed_find(&s->departed, id);

	return d && !d->released;
}

const char *series_cgroup_path(const struct wbg_series *s, uint64_t id)
{
	const struct wbg_cgroup *c = registry_find_id(s->reg, id);
	const struct wbg_departed_entry *d;

	if (c)
		return c->path;
	d = departed_find(&s->departed, id);
	return d ? d->path : NULL;
}
