/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf-programs.h"
#include "cgroup-util.h"
#include "log.h"
#include "macro.h"
#include "wbguard.skel.h"

#define WBG_PROGS_MAX 32

struct wbg_bpf {
	struct wbguard_bpf *skel;
	unsigned groups; /* what loaded */
	/* per program: attached, or why not */
	struct {
		const char *name;
		struct bpf_link *link;
		char why[96]; /* empty when attached or not asked for */
	} progs[WBG_PROGS_MAX];
	unsigned n_progs;
	struct ring_buffer *rmdir_rb;
	wbg_rmdir_cb rmdir_cb;
	void *rmdir_userdata;
	uint64_t devset_deletes; /* cgroup_devs entries we deleted (the BPF side counts inserts) */
};

/* libbpf's own messages go through our log at debug level (warnings at
 * warning), so a failed load explains itself without flooding the journal. */
__attribute__((format(printf, 2, 0))) static int libbpf_print(enum libbpf_print_level level, const char *fmt,
								 va_list ap)
{
	char buf[512];
	size_t n;

	if ((level == LIBBPF_DEBUG || level == LIBBPF_INFO) && log_get_max_level() < LOG_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	log_full_errno(level == LIBBPF_WARN ? LOG_WARNING : LOG_DEBUG, 0, "libbpf: %s", buf);
	return 0;
}

/* Whether the running kernel has what a program's section attaches to:
 * fentry/fexit need the function in BTF, tp_btf and tracepoint the event's
 * btf_trace_ typedef (every tracepoint has one). */
static bool kernel_has_hook(const struct btf *vmlinux, const char *section)
{
	const char *slash = strrchr(section, '/');
	char name[128];

	if (!slash || !vmlinux)
		return true; /* nothing to check; let the load tell */
	if (strncmp(section, "tp_btf/", 7) == 0 || strncmp(section, "tracepoint/", 11) == 0) {
		snprintf(name, sizeof(name), "btf_trace_%s", slash + 1);
		return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
	}
	return btf__find_by_name_kind(vmlinux, slash + 1, BTF_KIND_FUNC) > 0;
}

/* The number of arguments a tracepoint passes (its btf_trace_ typedef is a
 * pointer to a function whose first parameter is the probe's data), or -1. */
static int tp_nargs(const struct btf *vmlinux, const char *event)
{
	const struct btf_type *t;
	char name[128];
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", event);
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return -1;
	t = btf__type_by_id(vmlinux, btf__resolve_type(vmlinux, id)); /* the pointer */
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(vmlinux, t->type);
	return t && btf_is_func_proto(t) ? (int)btf_vlen(t) - 1 : -1;
}

/* Programs that come in two shapes for one event (seed 001 added a dev
 * argument): only the one matching the running kernel's event loads. */
static const struct {
	const char *prog, *event;
	int nargs;
	bool dev; /* the variant that reads the dev argument */
} shaped[] = {
	{ "path_fforeign", "flush_foreign", 3, false },
	{ "path_fforeign_dev", "flush_foreign", 4, true },
	{ "path_fdirty", "track_foreign_dirty", 2, false },
	{ "path_fdirty_dev", "track_foreign_dirty", 3, true },
};

/* NULL if the program fits this kernel, else why not. */
static const char *shape_mismatch(const struct btf *vmlinux, const char *prog)
{
	for (size_t i = 0; vmlinux && i < ELEMENTSOF(shaped); i++)
		if (strcmp(shaped[i].prog, prog) == 0 && tp_nargs(vmlinux, shaped[i].event) != shaped[i].nargs)
			return shaped[i].dev ? "event has no dev argument"
					     : "event has a dev argument (the _dev variant runs)";
	return NULL;
}

/* Which group a program belongs to, by name. */
static unsigned program_group(const char *name)
{
	if (strncmp(name, "wbid_", 5) == 0)
		return WBG_BPF_WBID;
	if (strncmp(name, "life_", 5) == 0)
		return WBG_BPF_RMDIR;
	if (strncmp(name, "path_", 5) == 0)
		return WBG_BPF_PATHS;
	return WBG_BPF_DIRTIED;
}

static char tracefs_root[256];

void wbg_bpf_set_tracefs(const char *dir)
{
	snprintf(tracefs_root, sizeof(tracefs_root), "%s", dir ? dir : "");
}

/* libbpf finds a classic tracepoint's id below /sys/kernel/tracing, which a
 * container does not have: with another tracefs root (the host's, through
 * /proc/1/root), open the perf event here and hand it to libbpf. */
static struct bpf_link *attach_tracepoint_at(struct bpf_program *p, const char *sec)
{
	_cleanup_free_ char *text = NULL;
	struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr), .sample_period = 1,
					.wakeup_events = 1 };
	char path[512];
	struct bpf_link *link;
	int fd;

	snprintf(path, sizeof(path), "%s/events/%s/id", tracefs_root, sec + strlen("tracepoint/"));
	if (read_small_file_at(AT_FDCWD, path, 64, &text) < 0 || sscanf(text, "%llu", &attr.config) != 1) {
		errno = ENOENT;
		return NULL;
	}
	fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return NULL;
	link = bpf_program__attach_perf_event(p, fd);
	if (!link) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return link;
}

/* Attaches every loaded program on its own: one that does not attach (a
 * classic tracepoint without tracefs, say) costs only its own counters.
 * b->progs[] is in the object's program order (filled by try_open). */
static void attach_each(struct wbg_bpf *b)
{
	struct bpf_program *p;
	unsigned i = 0;

	bpf_object__for_each_program(p, b->skel->obj) {
		typeof(b->progs[0]) *e = &b->progs[i++];

		if (!bpf_program__autoload(p))
			continue;
		e->link = bpf_program__attach(p);
		if (!e->link && tracefs_root[0] && strncmp(bpf_program__section_name(p), "tracepoint/", 11) == 0)
			e->link = attach_tracepoint_at(p, bpf_program__section_name(p));
		if (!e->link) {
			snprintf(e->why, sizeof(e->why), "attach failed: %s", strerror(errno));
			log_warning("BPF program %s did not attach (%s); its counters are missing", e->name,
				    strerror(errno));
		}
	}
}

/* One attempt with the given program groups. */
static int try_open(unsigned groups, unsigned max_inodes_per_cgroup, unsigned dirtied_cgroups, struct wbg_bpf **ret)
{
	_cleanup_(wbg_bpf_freep) struct wbg_bpf *b = NULL;
	struct btf *vmlinux;
	struct bpf_program *p;
	int r;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->skel = wbguard_bpf__open();
	if (!b->skel)
		return -errno;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return -errno;
	bpf_object__for_each_program(p, b->skel->obj) {
		const char *sec = bpf_program__section_name(p);
		unsigned i = b->n_progs++;

		if (i >= WBG_PROGS_MAX)
			return log_error_errno(E2BIG, "More BPF programs than WBG_PROGS_MAX");
		b->progs[i].name = bpf_program__name(p);
		if (!(program_group(bpf_program__name(p)) & groups)) {
			bpf_program__set_autoload(p, false);
			snprintf(b->progs[i].why, sizeof(b->progs[i].why), "not loaded: %s",
				 wbg_bpf_group_name(program_group(bpf_program__name(p))));
		} else if (shape_mismatch(vmlinux, bpf_program__name(p))) {
			bpf_program__set_autoload(p, false);
			snprintf(b->progs[i].why, sizeof(b->progs[i].why), "%s",
				 shape_mismatch(vmlinux, bpf_program__name(p)));
		} else if (!kernel_has_hook(vmlinux, sec)) {
			log_info("Kernel has no %s, skipping BPF program %s", strrchr(sec, '/') + 1,
				 bpf_program__name(p));
			bpf_program__set_autoload(p, false);
			snprintf(b->progs[i].why, sizeof(b->progs[i].why), "kernel has no %s", strrchr(sec, '/') + 1);
		}
	}
	btf__free(vmlinux);
	b->skel->rodata->max_inodes_per_cgroup = max_inodes_per_cgroup;
	if (dirtied_cgroups) {
		r = bpf_map__set_max_entries(b->skel->maps.cgroup_devs, dirtied_cgroups);
		if (r < 0)
			return r;
	}
	r = wbguard_bpf__load(b->skel);
	if (r < 0)
		return r;
	attach_each(b);
	b->groups = groups;
	*ret = TAKE_PTR(b);
	return 0;
}

int wbg_bpf_open(unsigned groups, unsigned max_inodes_per_cgroup, unsigned dirtied_cgroups, struct wbg_bpf **ret)
{
	unsigned ok = 0;
	int r;

	libbpf_set_print(libbpf_print);
	r = try_open(groups, max_inodes_per_cgroup, dirtied_cgroups, ret);
	if (r >= 0)
		return 0;
	/* One program the kernel refuses must not cost the others: find the
	 * groups that load on their own and run with those. */
	for (unsigned g = 1; g & WBG_BPF_ALL; g <<= 1) {
		struct wbg_bpf *b = NULL;

		if (!(groups & g))
			continue;
		if (try_open(g, max_inodes_per_cgroup, dirtied_cgroups, &b) >= 0)
			ok |= g;
		else
			log_warning("BPF program group '%s' does not load on this kernel", wbg_bpf_group_name(g));
		wbg_bpf_free(b);
	}
	if (!ok)
		return log_error_errno(r, "Failed to load BPF programs");
	return try_open(ok, max_inodes_per_cgroup, dirtied_cgroups, ret);
}

unsigned wbg_bpf_groups(const struct wbg_bpf *b)
{
	return b ? b->groups : 0;
}

const char *wbg_bpf_group_name(unsigned g)
{
	return g == WBG_BPF_WBID	  ? "cgroup_writeback_by_id results"
	       : g == WBG_BPF_DIRTIED ? "dirtied by cgroup"
	       : g == WBG_BPF_RMDIR   ? "cgroup removals"
	       : g == WBG_BPF_PATHS   ? "kernel writeback paths"
				      : "?";
}

struct wbg_bpf *wbg_bpf_free(struct wbg_bpf *b)
{
	if (!b)
		return NULL;
	ring_buffer__free(b->rmdir_rb);
	for (unsigned i = 0; i < b->n_progs; i++)
		bpf_link__destroy(b->progs[i].link);
	wbguard_bpf__destroy(b->skel);
	free(b);
	return NULL;
}

int wbg_bpf_attached(const struct wbg_bpf *b, const char *prog)
{
	for (unsigned i = 0; i < b->n_progs; i++)
		if (strcmp(b->progs[i].name, prog) == 0)
			return b->progs[i].link != NULL;
	return -ENOENT;
}

int wbg_bpf_foreach_program(const struct wbg_bpf *b, wbg_prog_cb cb, void *userdata)
{
	for (unsigned i = 0; b && i < b->n_progs; i++) {
		int r = cb(b->progs[i].name, b->progs[i].link != NULL, b->progs[i].why, userdata);

		if (r < 0)
			return r;
	}
	return 0;
}

int wbg_bpf_totals(const struct wbg_bpf *b, uint64_t ret[_WBG_TOTAL_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(b->skel->maps.totals);
	_cleanup_free_ uint64_t *v = NULL;
	uint64_t t[_WBG_TOTAL_MAX] = { 0 };

	if (ncpu < 0)
		return ncpu;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (__u32 k = 0; k < _WBG_TOTAL_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, v) < 0)
			return -errno;
		for (int c = 0; c < ncpu; c++)
			t[k] += v[c];
	}
	memcpy(ret, t, sizeof(t));
	return 0;
}

int wbg_bpf_drop_cgroup_series(const struct wbg_bpf *b, uint64_t cgroup_id)
{
	(void)bpf_map_delete_elem(bpf_map__fd(b->skel->maps.cgroup_stats), &cgroup_id);
	(void)bpf_map_delete_elem(bpf_map__fd(b->skel->maps.wbid_results), &cgroup_id);
	return 0;
}

const char *wbg_wbid_result_to_string(unsigned r)
{
	static const char *const names[_WBG_WBID_RESULT_MAX] = { "ok", "enoent", "other" };

	return r < _WBG_WBID_RESULT_MAX ? names[r] : "?";
}

const char *wbg_target_state_to_string(uint32_t s)
{
	switch (s) {
	case WBG_TARGET_LIVE:
		return "live";
	case WBG_TARGET_DYING:
		return "dying";
	default:
		return "unknown";
	}
}

/* Every (key, value) of a hash map, in batches where the kernel has them. */
typedef int (*map_cb)(const void *key, const void *value, void *userdata);

static int map_scan(int fd, size_t ksize, size_t vsize, map_cb cb, void *userdata)
{
	enum { BATCH = 1024 };
	_cleanup_free_ char *keys = malloc(ksize * BATCH), *vals = malloc(vsize * BATCH), *prev = malloc(ksize),
			    *next = malloc(ksize);
	__u64 in = 0, out = 0;
	bool first = true;
	int r;

	if (!keys || !vals || !prev || !next)
		return -ENOMEM;
	for (;;) {
		__u32 count = BATCH;

		r = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &count, NULL);
		if (r < 0 && errno != ENOENT) {
			if (!first || (errno != EINVAL && errno != ENOTSUP /* = EOPNOTSUPP */))
				return -errno;
			break; /* no batch ops: walk key by key below */
		}
		for (__u32 i = 0; i < count; i++) {
			int k = cb(keys + i * ksize, vals + i * vsize, userdata);

			if (k < 0)
				return k;
		}
		if (r < 0) /* ENOENT: that was the last batch */
			return 0;
		in = out;
		first = false;
	}
	for (void *p = NULL; bpf_map_get_next_key(fd, p, next) == 0; p = prev) {
		memcpy(prev, next, ksize);
		if (bpf_map_lookup_elem(fd, prev, vals) < 0)
			continue;
		r = cb(prev, vals, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

struct wbid_walk {
	wbg_wbid_cb cb;
	void *userdata;
};

static int wbid_cb(const void *key, const void *value, void *userdata)
{
	struct wbid_walk *w = userdata;

	return w->cb(*(const __u64 *)key, value, w->userdata);
}

int wbg_bpf_foreach_wbid(const struct wbg_bpf *b, wbg_wbid_cb cb, void *userdata)
{
	struct wbid_walk w = { cb, userdata };

	return map_scan(bpf_map__fd(b->skel->maps.wbid_results), sizeof(__u64), sizeof(struct wbg_wbid_counts), wbid_cb,
			&w);
}

/* The inode keys of one cgroup, gathered by a map scan. */
struct collect {
	__u64 cgroup_id;
	size_t n, cap;
	struct wbg_inode_key *v;
};

static int collect_cb(const void *key, const void *value, void *userdata)
{
	struct collect *c = userdata;
	const struct wbg_inode_key *k = key;

	if (k->cgroup_id != c->cgroup_id)
		return 0;
	if (c->n == c->cap) {
		struct wbg_inode_key *v = realloc(c->v, (c->cap = c->cap ? c->cap * 2 : 16) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
	}
	c->v[c->n++] = *k;
	return 0;
}

int wbg_bpf_cgroup_devs(const struct wbg_bpf *b, uint64_t cgroup_id, struct wbg_dirtied_dev **ret, size_t *ret_n,
			bool *ret_overflow, bool *ret_found)
{
	struct wbg_cgroup_devs v;
	struct wbg_dirtied_dev *d;
	bool found = true;
	size_t n = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.cgroup_devs), &cgroup_id, &v) < 0) {
		if (errno != ENOENT)
			return -errno;
		v = (struct wbg_cgroup_devs){ 0 }; /* dirtied nothing, or evicted (the caller asks which may be) */
		found = false;
	}
	d = calloc(WBG_DEVS_PER_CGROUP, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < WBG_DEVS_PER_CGROUP; i++)
		if (v.slot[i].tag)
			d[n++] = (struct wbg_dirtied_dev){ .dev = WBG_DEV_TAG_DEV(v.slot[i].tag),
							   .kind = WBG_DEV_TAG_KIND(v.slot[i].tag),
							   .folios = v.slot[i].folios,
							   .last_ns = v.slot[i].last_ns };
	*ret = d;
	*ret_n = n;
	*ret_overflow = v.overflow != 0;
	*ret_found = found;
	return 0;
}

static uint64_t devset_inserts(const struct wbg_bpf *b)
{
	uint64_t t[_WBG_TOTAL_MAX] = { 0 };

	return wbg_bpf_totals(b, t) < 0 ? 0 : t[WBG_T_DEVSET_INSERTS];
}

bool wbg_bpf_devsets_may_have_evicted(const struct wbg_bpf *b)
{
	uint64_t ins = devset_inserts(b), del = b->devset_deletes;

	/* half the bound: the kernel's LRU keeps per-CPU free lists and may
	 * start evicting before it is full */
	return ins > del && ins - del > bpf_map__max_entries(b->skel->maps.cgroup_devs) / 2;
}

int wbg_bpf_devsets_evicted(const struct wbg_bpf *b, uint64_t *ret)
{
	int fd = bpf_map__fd(b->skel->maps.cgroup_devs);
	uint64_t key, next, held = 0, ins = devset_inserts(b), del = b->devset_deletes;
	void *prev = NULL;

	if (!wbg_bpf_devsets_may_have_evicted(b)) {
		*ret = 0;
		return 0;
	}
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		held++;
		key = next;
		prev = &key;
	}
	*ret = ins > del + held ? ins - del - held : 0;
	return 0;
}

int wbg_bpf_cgroup_inodes(const struct wbg_bpf *b, uint64_t cgroup_id, struct wbg_inode_key **ret, size_t *ret_n,
			  bool *ret_complete)
{
	struct collect c = { .cgroup_id = cgroup_id };
	struct wbg_cgroup_inodes ci = { 0 };
	int r;

	r = map_scan(bpf_map__fd(b->skel->maps.dirtied_inodes), sizeof(struct wbg_inode_key), sizeof(__u64),
		     collect_cb, &c);
	if (r < 0) {
		free(c.v);
		return r;
	}
	(void)bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.cgroup_inodes), &cgroup_id, &ci);
	/* Incomplete when the per-cgroup bound was hit, or when the LRU
	 * evicted some of what was counted. */
	*ret_complete = !ci.overflow && c.n >= ci.count;
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}

/* O(1) whatever the node's size: the device set and the inode count go;
 * the cgroup's entries in dirtied_inodes are left to that map's LRU (cgroup
 * ids are never reused, and nothing touches them again, so they are the
 * first evicted). */
int wbg_bpf_forget_cgroup(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.cgroup_devs), &cgroup_id) == 0)
		b->devset_deletes++;
	(void)bpf_map_delete_elem(bpf_map__fd(b->skel->maps.cgroup_inodes), &cgroup_id);
	return 0;
}

struct stats_walk {
	wbg_stats_cb cb;
	void *userdata;
};

static int stats_cb(const void *key, const void *value, void *userdata)
{
	const struct stats_walk *w = userdata;

	return w->cb(*(const __u64 *)key, value, w->userdata);
}

int wbg_bpf_foreach_cgroup_stats(const struct wbg_bpf *b, wbg_stats_cb cb, void *userdata)
{
	struct stats_walk w = { cb, userdata };

	return map_scan(bpf_map__fd(b->skel->maps.cgroup_stats), sizeof(__u64), sizeof(struct wbg_cgroup_stats),
			stats_cb, &w);
}

static int rmdir_sample(void *ctx, void *data, size_t size)
{
	struct wbg_bpf *b = ctx;

	if (size < sizeof(struct wbg_rmdir_event))
		return 0;
	return b->rmdir_cb(data, b->rmdir_userdata);
}

int wbg_bpf_rmdir_open(struct wbg_bpf *b, wbg_rmdir_cb cb, void *userdata)
{
	if (!(b->groups & WBG_BPF_RMDIR))
		return -EOPNOTSUPP;
	b->rmdir_cb = cb;
	b->rmdir_userdata = userdata;
	b->rmdir_rb = ring_buffer__new(bpf_map__fd(b->skel->maps.rmdir_events), rmdir_sample, b, NULL);
	return b->rmdir_rb ? 0 : -errno;
}

int wbg_bpf_rmdir_fd(const struct wbg_bpf *b)
{
	return b->rmdir_rb ? ring_buffer__epoll_fd(b->rmdir_rb) : -EBADF;
}

int wbg_bpf_rmdir_consume(struct wbg_bpf *b)
{
	return b->rmdir_rb ? ring_buffer__consume(b->rmdir_rb) : 0;
}

int wbg_bpf_evidence(const struct wbg_bpf *b, struct wbg_evidence *e)
{
	uint64_t t[_WBG_TOTAL_MAX] = { 0 };
	int r = wbg_bpf_totals(b, t);

	if (r < 0)
		return r;
	e->ok_to_dying = t[WBG_T_WBID + 0 * 3 + WBG_TARGET_DYING];
	e->enoent_to_dying = t[WBG_T_WBID + 1 * 3 + WBG_TARGET_DYING];
	e->lookup_dying_found = t[WBG_T_LOOKUP_DYING_FOUND];
	e->bdev_flushes = t[WBG_T_BDEV_FLUSH];
	e->bdev_dirty_own_path = t[WBG_T_FOREIGN_DIRTY_BDEV];
	e->bdev_dirty_shared_path = t[WBG_T_FOREIGN_DIRTY_BDEV_SHARED];
	return 0;
}

int btf_struct_has_member(const char *type, const char *member)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	const struct btf_member *mb;
	const struct btf_type *t;
	int id, r = 0;

	if (!vmlinux)
		return -errno;
	id = btf__find_by_name_kind(vmlinux, type, BTF_KIND_STRUCT);
	if (id < 0) {
		btf__free(vmlinux);
		return -ENOENT;
	}
	t = btf__type_by_id(vmlinux, id);
	mb = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, mb++)
		if (strcmp(btf__name_by_offset(vmlinux, mb->name_off), member) == 0)
			r = 1;
	btf__free(vmlinux);
	return r;
}

int wbg_bpf_expiry_arm(struct wbg_bpf *b, uint64_t cgroup_id)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 armed = WBG_EXPIRY_ARMED;
	__u32 zero = 0;
	_cleanup_free_ void *last = NULL;

	if (!(b->groups & WBG_BPF_DIRTIED))
		return -EOPNOTSUPP;
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.expiry_watch), &cgroup_id, &armed, BPF_NOEXIST) == 0)
		b->skel->bss->expiry_pods++;
	else if (errno != EEXIST ||
		 bpf_map_update_elem(bpf_map__fd(b->skel->maps.expiry_watch), &cgroup_id, &armed, BPF_EXIST) < 0)
		return -errno;
	/* The per-CPU "same inode as last time" shortcut would hide a writer
	 * that keeps appending to one file: forget it. */
	if (ncpu < 0)
		return ncpu;
	last = calloc(ncpu, 16 /* struct last_seen, 8-byte aligned per CPU */);
	if (!last)
		return -ENOMEM;
	(void)bpf_map_update_elem(bpf_map__fd(b->skel->maps.dirty_last), &zero, last, BPF_ANY);
	return 0;
}

int wbg_bpf_expiry_forget(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (!(b->groups & WBG_BPF_DIRTIED))
		return 0;
	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.expiry_watch), &cgroup_id) == 0) {
		b->skel->bss->expiry_pods--;
		return 0;
	}
	return errno == ENOENT ? 0 : -errno;
}

bool wbg_bpf_dying_supported(const struct wbg_bpf *b)
{
	return b && (b->groups & WBG_BPF_RMDIR) && b->rmdir_rb &&
	       (wbg_bpf_attached(b, "path_fdirty") > 0 || wbg_bpf_attached(b, "path_fdirty_dev") > 0);
}

int wbg_bpf_dying_arm(struct wbg_bpf *b, uint64_t cgroup_id, bool stall_only)
{
	int fd = bpf_map__fd(b->skel->maps.dying_watch);
	/* without the -ENOENT program, a dirtying is the only sign there is */
	__u64 armed = stall_only && (b->groups & WBG_BPF_WBID) ? WBG_DYING_ARMED_STALL : WBG_DYING_ARMED;

	if (!wbg_bpf_dying_supported(b))
		return -EOPNOTSUPP;
	if (bpf_map_update_elem(fd, &cgroup_id, &armed, BPF_NOEXIST) == 0) {
		b->skel->bss->dying_watched++;
		return 0;
	}
	if (errno == EEXIST && bpf_map_update_elem(fd, &cgroup_id, &armed, BPF_EXIST) == 0)
		return 0;
	return -errno;
}

int wbg_bpf_dying_forget(struct wbg_bpf *b, uint64_t cgroup_id)
{
	if (!wbg_bpf_dying_supported(b))
		return 0;
	if (bpf_map_delete_elem(bpf_map__fd(b->skel->maps.dying_watch), &cgroup_id) == 0) {
		b->skel->bss->dying_watched--;
		return 0;
	}
	return errno == ENOENT ? 0 : -errno;
}
