/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf-counters.h"
#include "log.h"
#include "macro.h"
#include "wbguard.skel.h"

struct wbg_bpf {
	struct wbguard_bpf *skel;
};

/* libbpf's own messages go through our log at debug level (warnings at
 * warning), so a failed load explains itself without flooding the journal. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
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

/* A fentry/fexit program needs its function in the running kernel's BTF. */
static int kernel_has_func(const struct btf *vmlinux, const char *name)
{
	return vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
}

int wbg_bpf_open(struct wbg_bpf **ret)
{
	_cleanup_(wbg_bpf_freep) struct wbg_bpf *b = NULL;
	struct btf *vmlinux;
	struct bpf_program *p;
	int r;

	libbpf_set_print(libbpf_print);
	b = calloc(1, sizeof(*b));
	if (!b)
		return log_oom();
	b->skel = wbguard_bpf__open();
	if (!b->skel)
		return log_error_errno(errno, "Failed to open BPF skeleton");

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return log_error_errno(errno, "Kernel BTF (/sys/kernel/btf/vmlinux) not available");
	bpf_object__for_each_program(p, b->skel->obj) {
		const char *target = strchr(bpf_program__section_name(p), '/');

		if (target && !kernel_has_func(vmlinux, target + 1)) {
			log_info("Kernel has no %s(), skipping BPF program %s", target + 1,
				 bpf_program__name(p));
			bpf_program__set_autoload(p, false);
		}
	}
	btf__free(vmlinux);

	r = wbguard_bpf__load(b->skel);
	if (r < 0)
		return log_error_errno(r, "Failed to load BPF programs");
	r = wbguard_bpf__attach(b->skel);
	if (r < 0)
		return log_error_errno(r, "Failed to attach BPF programs");

	*ret = TAKE_PTR(b);
	return 0;
}

struct wbg_bpf *wbg_bpf_free(struct wbg_bpf *b)
{
	if (!b)
		return NULL;
	wbguard_bpf__destroy(b->skel);
	free(b);
	return NULL;
}

int wbg_bpf_attached(const struct wbg_bpf *b, const char *prog)
{
	struct bpf_program *p = bpf_object__find_program_by_name(b->skel->obj, prog);

	if (!p)
		return -ENOENT;
	return bpf_program__autoload(p) && bpf_program__fd(p) >= 0;
}

int wbg_bpf_foreach_wbid(const struct wbg_bpf *b, wbg_wbid_cb cb, void *userdata)
{
	int fd = bpf_map__fd(b->skel->maps.wbid_results);
	struct wbg_wbid_key key, next;
	struct wbg_wbid_key *prev = NULL;
	uint64_t count;
	int r;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &count) < 0)
			continue; /* evicted between the two calls */
		r = cb(&key, count, userdata);
		if (r < 0)
			return r;
	}
	return 0;
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
