/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
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
#include "wbg-base.h"
#include "wbguard.skel.h"

#include "bpf-internal.h"

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

/* Programs that come in two shapes for one event (the separate bdev
 * flush added a dev argument): only the one matching the running kernel's event loads. */
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
unsigned wbg_bpf_program_group(const char *name)
{
	if (strncmp(name, "wbid_", 5) == 0)
		return WBG_BPF_WBID;
	if (strncmp(name, "life_", 5) == 0)
		return WBG_BPF_LIFE;
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
 * b->progs[] is in the object's program order (filled by try_open). The
 * per-folio expiry program waits for its first pod (wbg_bpf_set_on_demand). */
static void attach_each(struct wbg_bpf *b)
{
	struct bpf_program *p;
	unsigned i = 0;

	bpf_object__for_each_program(p, b->skel->obj) {
		typeof(b->progs[0]) *e = &b->progs[i++];

		if (!bpf_program__autoload(p))
			continue;
		if (p == b->skel->progs.expiry_folio) {
			snprintf(e->why, sizeof(e->why), "idle");
			continue;
		}
		e->link = bpf_program__attach(p);
		if (!e->link && tracefs_root[0] && strncmp(bpf_program__section_name(p), "tracepoint/", 11) == 0)
			e->link = attach_tracepoint_at(p, bpf_program__section_name(p));
		if (!e->link) {
			snprintf(e->why, sizeof(e->why), "attach_failed");
			log_warning("BPF program %s did not attach (%s); its counters are missing", e->name,
				    strerror(errno));
		}
	}
}

/* One attempt with the given program groups. */
static int try_open(unsigned groups, const struct wbg_bpf_limits *lim, struct wbg_bpf **ret)
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
		if (!(wbg_bpf_program_group(bpf_program__name(p)) & groups)) {
			bpf_program__set_autoload(p, false);
			snprintf(b->progs[i].why, sizeof(b->progs[i].why), "not_requested");
			log_debug("BPF program %s not loaded: its group %s was not asked for", bpf_program__name(p),
				  wbg_bpf_group_name(wbg_bpf_program_group(bpf_program__name(p))));
		} else if (shape_mismatch(vmlinux, bpf_program__name(p))) {
			bpf_program__set_autoload(p, false);
			snprintf(b->progs[i].why, sizeof(b->progs[i].why), "other_event_shape");
			log_info("BPF program %s skipped: %s", bpf_program__name(p),
				 shape_mismatch(vmlinux, bpf_program__name(p)));
		} else if (!kernel_has_hook(vmlinux, sec)) {
			log_info("Kernel has no %s, skipping BPF program %s", strrchr(sec, '/') + 1,
				 bpf_program__name(p));
			bpf_program__set_autoload(p, false);
			snprintf(b->progs[i].why, sizeof(b->progs[i].why), "no_kernel_hook");
		}
	}
	btf__free(vmlinux);
	if (lim->max_inodes_per_cgroup)
		b->skel->rodata->max_inodes_per_cgroup = lim->max_inodes_per_cgroup;
	if (lim->max_inodes_per_tenant)
		b->skel->rodata->max_inodes_per_tenant = lim->max_inodes_per_tenant == UINT_MAX ? 0 : lim->max_inodes_per_tenant;
	{
		/* the records' fair shares, as every other table's */
		struct wbg_share s = { 0 };
		unsigned n = lim->inode_records ? lim->inode_records : WBG_INODES_MAX;

		share_set(&s, n, b->skel->rodata->max_inodes_per_tenant);
		b->skel->rodata->inodes_floor = s.floor;
		b->skel->rodata->inodes_pool = s.pool;
	}
	if (lim->inode_records) {
		r = bpf_map__set_max_entries(b->skel->maps.dirtied_inodes, lim->inode_records);
		if (r >= 0)
			r = bpf_map__set_max_entries(b->skel->maps.inode_slots, lim->inode_records);
		if (r < 0)
			return r;
	}
	if (lim->dirtied_cgroups) {
		r = bpf_map__set_max_entries(b->skel->maps.cgroup_devs, lim->dirtied_cgroups);
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

int wbg_bpf_open(unsigned groups, const struct wbg_bpf_limits *limits, struct wbg_bpf **ret)
{
	const struct wbg_bpf_limits none = { 0 }, *lim = limits ? limits : &none;
	unsigned ok = 0;
	int r;

	libbpf_set_print(libbpf_print);
	r = try_open(groups, lim, ret);
	if (r >= 0)
		return 0;
	/* One program the kernel refuses must not cost the others: find the
	 * groups that load on their own and run with those. */
	for (unsigned g = 1; g & WBG_BPF_ALL; g <<= 1) {
		struct wbg_bpf *b = NULL;

		if (!(groups & g))
			continue;
		if (try_open(g, lim, &b) >= 0)
			ok |= g;
		else
			log_warning("BPF program group '%s' does not load on this kernel", wbg_bpf_group_name(g));
		wbg_bpf_free(b);
	}
	if (!ok)
		return log_error_errno(r, "Failed to load BPF programs");
	r = try_open(ok, lim, ret);
	if (r < 0)
		return r;
	/* the programs of the groups the kernel's verifier refused say so,
	 * not that nobody asked for them */
	for (unsigned i = 0; i < (*ret)->n_progs; i++)
		if (wbg_bpf_program_group((*ret)->progs[i].name) & groups & ~ok)
			snprintf((*ret)->progs[i].why, sizeof((*ret)->progs[i].why), "load_refused");
	return 0;
}

/* The per-folio expiry program runs only while some pod has a per-pod
 * expiry: attached at the first, detached after the last. */
int wbg_bpf_set_on_demand(struct wbg_bpf *b, bool on)
{
	struct bpf_program *p = b->skel->progs.expiry_folio;
	unsigned i = 0;
	struct bpf_program *q;

	if (!bpf_program__autoload(p))
		return -EOPNOTSUPP;
	bpf_object__for_each_program(q, b->skel->obj) {
		typeof(b->progs[0]) *e = &b->progs[i++];

		if (q != p)
			continue;
		if (on && !e->link) {
			e->link = bpf_program__attach(p);
			if (!e->link) {
				int r = -errno;

				snprintf(e->why, sizeof(e->why), "attach_failed");
				return log_warning_errno(r, "BPF program %s did not attach: %m", e->name);
			}
			e->why[0] = 0;
		} else if (!on && e->link) {
			bpf_link__destroy(e->link);
			e->link = NULL;
			snprintf(e->why, sizeof(e->why), "idle");
		}
		return 0;
	}
	return -ENOENT;
}

unsigned wbg_bpf_groups(const struct wbg_bpf *b)
{
	return b ? b->groups : 0;
}

const char *wbg_bpf_group_name(unsigned g)
{
	return g == WBG_BPF_WBID	  ? "cgroup_writeback_by_id results"
	       : g == WBG_BPF_DIRTIED ? "dirtied by cgroup"
	       : g == WBG_BPF_LIFE   ? "cgroup removals"
	       : g == WBG_BPF_PATHS   ? "kernel writeback paths"
				      : "?";
}

struct wbg_bpf *wbg_bpf_free(struct wbg_bpf *b)
{
	if (!b)
		return NULL;
	ring_buffer__free(b->event_rb);
	for (unsigned i = 0; i < b->n_progs; i++)
		bpf_link__destroy(b->progs[i].link);
	wbguard_bpf__destroy(b->skel);
	free(b);
	return NULL;
}

