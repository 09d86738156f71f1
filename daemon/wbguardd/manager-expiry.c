/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-pod expiry's world (expiry.h): the clock and its timer, what the
 * registry, the containers the hook registered and the runtimes' state say
 * of a cgroup, BPF arming, the pool's writeback, memory.stat and the
 * kernel's verdict. */
#include <errno.h>
#include <unistd.h>
#include <json-c/json.h>

#include "wbg-kernel.h"
#include "wbg-cgroup.h"
#include "wbg-base.h"
#include "manager.h"
#include "wbg-runtime.h"
#include "timer-util.h"

static uint64_t op_now(void *userdata)
{
	return manager_now_usec(userdata);
}

static void op_schedule(void *userdata, uint64_t usec)
{
	struct manager *m = userdata;

	timer_arm_by(m->expiry_source, usec);
}

/* Whether any runtime keeps containers here: hosts without one never wait
 * for a runtime's state. */
static bool runtimes_present(const char *const *dirs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (access(dirs[i], F_OK) == 0)
			return true;
	return false;
}

/* A container no hook registered, found in its runtime's state (a runtime
 * without hooks: containerd's ctr, Docker): its names (the pod's, from the
 * CRI's annotations) and id go to the container table as the hook's would,
 * for the records, the journal and the metrics' labels. */
static void note_container(struct manager *m, const char *path, const struct wbg_container_state *st)
{
	const char *keys[WBG_CONTAINER_ANNOTATIONS_MAX], *values[WBG_CONTAINER_ANNOTATIONS_MAX];
	size_t n = 0;

	json_object_object_foreach(st->annotations, k, v) {
		if (n == WBG_CONTAINER_ANNOTATIONS_MAX)
			break;
		if (!json_object_is_type(v, json_type_string))
			continue;
		keys[n] = k;
		values[n++] = json_object_get_string(v);
	}
	if (containers_register_from(&m->containers, WBG_SOURCE_STATE, path, st->id, st->bundle, keys, values, n) < 0)
		log_oom();
	else
		log_debug("%s: container %s (%s), from its runtime's state", path, st->id, st->runtime);
}

static int op_lookup(void *userdata, uint64_t cgroup_id, struct wbg_expiry_subject *ret)
{
	struct manager *m = userdata;
	const struct wbg_cgroup *c = registry_find_id(&m->reg, cgroup_id);
	struct wbg_container_state st = { 0 };
	const struct wbg_container *reg;
	const char *const *dirs, *annotation = NULL;
	unsigned n_dirs;
	int found;

	if (!c)
		return -ENOENT;
	*ret = (struct wbg_expiry_subject){ 0 };
	snprintf(ret->path, sizeof(ret->path), "%s", c->path);
	snprintf(ret->unit, sizeof(ret->unit), "%s", c->ident.unit);
	/* A container registered (by the OCI hook, NRI) says it first; else
	 * its runtime's state on disk. NRI registers every CRI container (at
	 * connect and as they come), so there the scan answers only for the
	 * others: Docker's, nerdctl's, Podman's, which NRI never sees. */
	reg = containers_find(&m->containers, c->path);
	dirs = config_runtime_dirs(&m->cfg, &n_dirs);
	found = reg ? 1 : runtime_index_find(m->runtime_index, dirs, n_dirs, m->cfg.cgroup_root, c->path, &st);
	if (reg) {
		snprintf(ret->container_id, sizeof(ret->container_id), "%s", reg->id);
		containers_sources_to_string(reg->sources, ret->runtime, sizeof(ret->runtime));
		annotation = reg->dirty_expire;
	} else if (found > 0) {
		snprintf(ret->container_id, sizeof(ret->container_id), "%s", st.id);
		snprintf(ret->runtime, sizeof(ret->runtime), "%s", st.runtime);
		annotation = runtime_state_annotation(&st, WBG_EXPIRY_ANNOTATION);
		note_container(m, c->path, &st);
	}
	ret->container = found > 0;
	if (annotation) {
		ret->has_annotation = true;
		snprintf(ret->annotation, sizeof(ret->annotation), "%s", annotation);
	}
	ret->runtimes_present = found == 0 && runtimes_present(dirs, n_dirs);
	runtime_state_done(&st);
	return 0;
}

static int op_arm(void *userdata, uint64_t cgroup_id)
{
	struct manager *m = userdata;

	return m->bpf ? wbg_bpf_expiry_arm(m->bpf, cgroup_id) : -EOPNOTSUPP;
}

static void op_forget(void *userdata, uint64_t cgroup_id)
{
	struct manager *m = userdata;

	if (m->bpf)
		(void)wbg_bpf_expiry_forget(m->bpf, cgroup_id);
}

/* The same plan as a handover's, from what BPF recorded it dirtied, but no
 * block devices' page cache, which other pods share; syncfs only where
 * inodes cannot be opened by handle. */
static int op_writeback(void *userdata, uint64_t cgroup_id, const char *path)
{
	struct manager *m = userdata;
	struct wbg_plan_params pp = config_plan_params(&m->cfg);
	struct wbg_plan plan = { 0 };
	int r, n = 0;

	pp.inodes = true;
	pp.block_devices = false;
	r = handover_plan(cgroup_id, &pp, &m->host.mounts, &m->host.bdevs, m->bpf, &plan);
	if (r < 0)
		return r;
	for (size_t i = 0; i < plan.n; i++) {
		if (plan.t[i].kind != FLUSH_FS)
			continue;
		if (plan_target_submit(m->pool, &plan.t[i], FLUSH_FOR_EXPIRY, cgroup_id) < 0) {
			log_oom();
			break;
		}
		n++;
	}
	plan_free(&plan);
	return n;
}

static int op_read_dirty(void *userdata, const char *path, uint64_t *ret)
{
	struct manager *m = userdata;

	return cg_read_keyed_u64(m->cfg.cgroup_root, path, "memory.stat", "file_dirty", ret);
}

static bool op_fallback_active(void *userdata)
{
	struct manager *m = userdata;

	return m->verdicts.dying_wb == WBG_VERDICT_ACTIVE;
}

const struct wbg_expiry_ops manager_expiry_ops = {
	.now = op_now,
	.schedule = op_schedule,
	.lookup = op_lookup,
	.arm = op_arm,
	.forget = op_forget,
	.writeback = op_writeback,
	.read_dirty = op_read_dirty,
	.fallback_active = op_fallback_active,
};

/* Expiry's part of the configuration: the policies, the boost. */
struct wbg_expiry_params manager_expiry_params(const struct manager *m)
{
	return (struct wbg_expiry_params){
		.rules = config_expiry_rules(&m->cfg),
		.boost_cs = m->cfg.boost_cs,
		.boost_window_usec = m->cfg.boost_window_usec,
		.flush = m->cfg.flush,
	};
}
