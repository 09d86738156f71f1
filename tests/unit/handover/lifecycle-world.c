/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <json-c/json.h>

#include "lifecycle-world.h"

struct world world;

static uint64_t f_now(void *u)
{
	return world.now;
}

static void f_schedule(void *u, uint64_t usec)
{
	world.scheduled = usec;
}

static int add_targets(struct wbg_plan *p, unsigned n, const char *source)
{
	p->t = calloc(n + 1, sizeof(*p->t));
	if (!p->t)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		p->t[p->n++] = (struct wbg_plan_target){ .dev = makedev(253, i), .kind = FLUSH_FS, .fstype = "ext4",
							 .mount = "/mnt", .use_inodes = world.plan_uses_inodes };
	p->source = source;
	return 0;
}

static int f_plan(void *u, uint64_t id, const struct wbg_cgroup *c, bool inodes, struct wbg_plan *ret)
{
	world.last_plan_inodes = inodes;
	*ret = (struct wbg_plan){ .own_set_missing = world.own_set_missing, .set_maybe_evicted = world.set_maybe_evicted,
				  .n_excluded = world.n_excluded };
	if (world.plan_result < 0)
		return world.plan_result;
	return add_targets(ret, world.plan_targets, "bpf");
}

static int f_plan_mounts(void *u, struct wbg_plan *ret)
{
	free(ret->t);
	ret->t = NULL;
	ret->n = 0;
	return add_targets(ret, world.mount_targets, "mounts");
}

static int f_plan_recorded(void *u, const dev_t *devs, const bool *bdev, size_t n, struct wbg_plan *ret)
{
	if (world.n_recorded < ELEMENTSOF(world.recorded)) {
		typeof(world.recorded[0]) *c = &world.recorded[world.n_recorded++];

		c->n = n;
		for (size_t i = 0; i < n && i < ELEMENTSOF(c->devs); i++) {
			c->devs[i] = devs[i];
			c->bdev[i] = bdev[i];
		}
	}
	*ret = (struct wbg_plan){ 0 };
	return add_targets(ret, world.recorded_targets, "recorded");
}

static int f_submit(void *u, const struct wbg_plan_target *t, enum flush_purpose purpose, uint64_t id)
{
	if (world.submit_result < 0)
		return world.submit_result;
	world.sub[world.n_sub++ % 64] = (struct submitted){ .id = handover_waiter_id(id), .waiter = id, .purpose = purpose, .dev = t->dev, .n_inodes = t->n_inodes,
						    .first_ino = t->n_inodes ? t->inodes[0].ino : 0 };
	return 0;
}

static void f_timed_out(void *u)
{
	world.timed_out++;
}

static int f_read_dirty(void *u, const char *path, uint64_t *d, uint64_t *w)
{
	if (world.dirty_result < 0)
		return world.dirty_result;
	*d = world.dirty;
	*w = world.writeback;
	return 0;
}

static bool f_has_children(void *u, const char *path)
{
	return world.children;
}

static int f_cleanup(void *u)
{
	world.cleanups++;
	return world.cleanup_result;
}

static int cmp(const void *a, const void *b)
{
	uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;

	return p < q ? -1 : p > q;
}

static uint64_t *sorted(const uint64_t *v, size_t n)
{
	uint64_t *s = calloc(n + 1, sizeof(uint64_t));

	if (s) {
		memcpy(s, v, n * sizeof(uint64_t));
		qsort(s, n, sizeof(uint64_t), cmp);
	}
	return s;
}

/* A dirty wb is listed too; wb_listed adds clean ones still listed. */
static int f_census(void *u, struct wbg_wb_census *ret)
{
	uint64_t all[16];
	size_t n = 0;

	if (world.no_wbstats)
		return -ENOENT;
	for (size_t i = 0; i < world.n_wb_dirty; i++)
		all[n++] = world.wb_dirty[i];
	for (size_t i = 0; i < world.n_wb_listed; i++)
		all[n++] = world.wb_listed[i];
	*ret = (struct wbg_wb_census){ .dirty = sorted(world.wb_dirty, world.n_wb_dirty),
				       .n_dirty = world.n_wb_dirty,
				       .listed = sorted(all, n),
				       .n_listed = n };
	if (!ret->dirty || !ret->listed) {
		wbstats_census_done(ret);
		return -ENOMEM;
	}
	return 0;
}

static int f_arm(void *u, uint64_t id, bool stall_only)
{
	world.armed++;
	world.last_armed = id;
	world.last_arm_stall_only = stall_only;
	return 0;
}

static void f_disarm(void *u, uint64_t id)
{
	world.disarmed++;
}

static void f_forget(void *u, uint64_t id)
{
	world.forgotten++;
}

static int f_pending_save(void *u, const struct wbg_handover *h, const struct wbg_plan *p)
{
	world.pending_saves++;
	return 0;
}

static void f_pending_drop(void *u, uint64_t id)
{
	world.pending_drops++;
}

static void f_ended(void *u, const struct wbg_handover *h, const char *json)
{
	world.ended++;
	world.last_h = h;
	world.last_outcome = h->outcome;
	world.last_trigger = h->trigger;
	world.last_reason = h->reason;
	world.last_not_own = h->not_own;
	snprintf(world.last_json, sizeof(world.last_json), "%s", json);
}

int call_index(void *call)
{
	return (int)((int *)call - world.calls);
}

static void f_reply(void *u, void *call, uint64_t id, const char *outcome, const char *reason)
{
	int i = call_index(call);

	world.replies[i]++;
	world.reply_id[i] = id;
	snprintf(world.reply_outcome[i], sizeof(world.reply_outcome[i]), "%s", outcome);
}

static void *f_call_ref(void *u, void *call)
{
	world.refs[call_index(call)]++;
	return call;
}

static void f_call_unref(void *u, void *call)
{
	world.refs[call_index(call)]--;
}

static const struct wbg_clock_ops clock_ops = {
	.now = f_now,
	.schedule = f_schedule,
};

static const struct wbg_flusher_ops flusher_ops = {
	.plan = f_plan,
	.plan_mounts = f_plan_mounts,
	.plan_recorded = f_plan_recorded,
	.submit = f_submit,
	.timed_out = f_timed_out,
	.pending_save = f_pending_save,
	.pending_drop = f_pending_drop,
};

static const struct wbg_kernel_ops kernel_ops = {
	.read_dirty = f_read_dirty,
	.has_children = f_has_children,
	.cleanup = f_cleanup,
	.census = f_census,
	.arm = f_arm,
	.disarm = f_disarm,
	.forget = f_forget,
};

static const struct wbg_audience_ops audience_ops = {
	.ended = f_ended,
	.reply = f_reply,
	.call_ref = f_call_ref,
	.call_unref = f_call_unref,
};

const struct wbg_lifecycle_world ops = {
	.clock = &clock_ops,
	.flusher = &flusher_ops,
	.kernel = &kernel_ops,
	.audience = &audience_ops,
};


struct wbg_registry reg;
struct wbg_containers containers;
struct wbg_lifecycle lc;
char dir[] = "/tmp/wbg-handovers-XXXXXX";

void reset_world(void)
{
	memset(&world, 0, sizeof(world));
	world.now = 1000 * S;
	world.plan_targets = 1;
	world.mount_targets = 2;
	world.recorded_targets = 1;
	world.dirty = 4096;
}

void setup(bool on_evidence)
{
	struct wbg_lifecycle_params p = {
		.timeout_usec = 30 * S,
		.flush = true,
		.on_evidence = on_evidence,
		.watch = { .max = 16, .max_per_tenant = 16, .drain_after_usec = 60 * S, .max_age_usec = 300 * S, .reflush_usec = S / 4 },
	};

	reset_world();
	reg = (struct wbg_registry){ 0 };
	lifecycle_init(&lc, &p, &reg, &containers, &ops);
	lifecycle_open_ids(&lc, dir, 0);
}

void teardown(void)
{
	lifecycle_stop(&lc);
	registry_free(&reg);
}

struct wbg_cgroup *cgroup(uint64_t id, const char *path)
{
	struct wbg_cgroup *c = NULL;

	if (registry_add(&reg, id, path, &c) < 0)
		abort();
	c->in_scope = true;
	c->populated = true;
	return c;
}

void job_done(uint64_t id, int result)
{
	const struct wbg_handover *h = lifecycle_find(&lc, id);

	/* the handover's current round's job */
	job_done_waiter(h ? handover_waiter(h) : id, result);
}

void job_done_waiter(uint64_t waiter, int result)
{
	struct flush_job *j = flush_job_new(makedev(253, 0), FLUSH_FS, "ext4", "/mnt");

	if (!j || flush_job_add_waiter(j, waiter) < 0)
		abort();
	j->result = result;
	j->started_usec = world.now;
	j->device_bytes = 4096;
	lifecycle_job_done(&lc, j);
	flush_job_free(j);
}

void advance(uint64_t t)
{
	while (world.scheduled && world.scheduled <= t) {
		/* a timer asked for a time already past fires now, as sd-event's
		 * do: the clock never goes back */
		if (world.scheduled > world.now)
			world.now = world.scheduled;
		world.scheduled = 0;
		lifecycle_tick(&lc);
	}
	world.now = t;
}

void removed(struct wbg_cgroup *c)
{
	c->removed = true;
	(void)lifecycle_event(&lc, c, WBG_TRIGGER_REMOVED);
	registry_remove(&reg, c);
}

void dying_wb_dirty(uint64_t cgroup_id)
{
	if (world.n_wb_dirty >= ELEMENTSOF(world.wb_dirty))
		abort();
	world.wb_dirty[world.n_wb_dirty++] = cgroup_id;
}

struct wbg_handover *watched(uint64_t id, const char *path)
{
	struct wbg_cgroup *c = cgroup(id, path);
	struct wbg_handover *h;

	(void)lifecycle_event(&lc, c, WBG_TRIGGER_POPULATED_0);
	h = c->handover;
	removed(c);
	return h;
}

bool world_recorded(unsigned n, enum wbg_outcome outcome)
{
	return world.ended == n && world.last_outcome == outcome;
}

/* The last record's field key, of type type, or NULL; *root is the parsed
 * record, for the caller to put. */
static struct json_object *record_field(const char *key, enum json_type type, struct json_object **root)
{
	struct json_object *v;

	*root = json_tokener_parse(world.last_json);
	if (!*root || !json_object_object_get_ex(*root, key, &v) || !json_object_is_type(v, type))
		return NULL;
	return v;
}

bool world_json_has(const char *key)
{
	struct json_object *o = json_tokener_parse(world.last_json);
	bool ok = o && json_object_object_get_ex(o, key, NULL);

	json_object_put(o);
	return ok;
}

int world_json_bool(const char *key)
{
	struct json_object *o, *v = record_field(key, json_type_boolean, &o);
	int r = v ? json_object_get_boolean(v) : -1;

	json_object_put(o);
	return r;
}

double world_json_double(const char *key)
{
	struct json_object *o, *v = record_field(key, json_type_double, &o);
	double r = v ? json_object_get_double(v) : -1;

	json_object_put(o);
	return r;
}

int64_t world_json_int(const char *key)
{
	struct json_object *o, *v = record_field(key, json_type_int, &o);
	int64_t r = v ? json_object_get_int64(v) : -1;

	json_object_put(o);
	return r;
}

bool world_json_string_is(const char *key, const char *value)
{
	struct json_object *o, *v = record_field(key, json_type_string, &o);
	bool ok = v && strcmp(json_object_get_string(v), value) == 0;

	json_object_put(o);
	return ok;
}

int world_open(void)
{
	return mkdtemp(dir) && containers_init(&containers, 16) >= 0 ? 0 : -1;
}

void world_close(void)
{
	char p[64];

	containers_free(&containers);
	snprintf(p, sizeof(p), "%s/handover-ids", dir);
	unlink(p);
	rmdir(dir);
}
