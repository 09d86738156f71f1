/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel moves a dying wb's clean inodes to a live ancestor's wb in
 * cleanup_offline_cgwbs_workfn(), but skips a wb that still has dirty IO and
 * only tries again when the next memcg goes offline. After wbguardd has
 * flushed a removed cgroup, creating and removing an empty child memcg makes
 * the kernel try again. The scratch cgroup that holds it is private to
 * wbguardd and never left behind.
 */
#pragma once

#include <stdint.h>

struct wbg_scratch {
	char *root; /* cgroupfs root */
	char *path; /* scratch cgroup, relative to root */
	int created; /* we made the directory (and remove it at the end) */
};

/* path: relative to root; "" picks one: a "scratch" child of our own cgroup
 * when systemd delegated it to us (trusted.delegate), else
 * "wbguard.scratch" below parent (relative to root; NULL or "": the root
 * itself). The cgroupfs root directory is mode 0555, so a child there needs
 * CAP_DAC_OVERRIDE; one below a subtree we watch (kubepods.slice) does not. */
int scratch_open(const char *root, const char *path, const char *parent, struct wbg_scratch *ret);
/* mkdir + rmdir of an empty child memcg. */
int scratch_cycle(const struct wbg_scratch *s, uint64_t seq);
void scratch_close(struct wbg_scratch *s);
