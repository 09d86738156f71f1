/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loads wbguard's BPF programs and reads their counters. */
#pragma once

#include <stdint.h>
#include <linux/types.h>

#include "bpf/wbguard.h"

struct wbg_bpf;

/* Opens, loads and attaches what this kernel supports. Programs whose hook is
 * missing are skipped; wbg_bpf_attached() says which were attached. */
int wbg_bpf_open(struct wbg_bpf **ret);
struct wbg_bpf *wbg_bpf_free(struct wbg_bpf *b);
static inline void wbg_bpf_freep(struct wbg_bpf **b)
{
	if (*b)
		wbg_bpf_free(*b);
}

/* Which named program is attached ("wbid_exit", ...). */
int wbg_bpf_attached(const struct wbg_bpf *b, const char *prog);

typedef int (*wbg_wbid_cb)(const struct wbg_wbid_key *key, uint64_t count, void *userdata);
/* Calls cb for every cgroup_writeback_by_id() result series; stops at the
 * first negative return of cb and returns it. */
int wbg_bpf_foreach_wbid(const struct wbg_bpf *b, wbg_wbid_cb cb, void *userdata);

const char *wbg_target_state_to_string(uint32_t s);
