/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF object's state, between its loader (bpf-programs.c) and its map
 * readers (bpf-maps.c) only. */
#pragma once

#include "bpf-programs.h"
#include "wbguard.skel.h"

#define WBG_PROGS_MAX 32

struct wbg_bpf {
	struct wbguard_bpf *skel;
	unsigned groups; /* what loaded */
	/* per program: attached, or why not */
	struct {
		const char *name;
		struct bpf_link *link;
		char why[32]; /* why not: not_requested, other_event_shape, no_kernel_hook, load_refused, attach_failed; empty when attached */
	} progs[WBG_PROGS_MAX];
	unsigned n_progs;
	struct ring_buffer *event_rb;
	wbg_ring_event_cb ring_cb;
	void *ring_userdata;
	uint64_t devset_deletes; /* cgroup_devs entries we deleted (the BPF side counts inserts) */
	uint64_t tenant_map_full; /* cgroups whose tenant the full cgroup_tenant map had no room for */
};

/* The per-folio expiry program attached (on) or detached (off): bpf-maps.c
 * turns it on with the first pod that has a per-pod expiry. */
int wbg_bpf_set_on_demand(struct wbg_bpf *b, bool on);

/* The event ring's sample callback (ctx: the struct wbg_bpf): an event of
 * size bytes passed on to b->ring_cb, or dropped (0) when it is shorter
 * than its kind carries or its removal path is not NUL-terminated. Here
 * for its unit test, which needs no kernel. */
int wbg_bpf_ring_sample(void *ctx, void *data, size_t size);
/* The program group (WBG_BPF_*) a program belongs to, by its name. */
unsigned wbg_bpf_program_group(const char *name);
