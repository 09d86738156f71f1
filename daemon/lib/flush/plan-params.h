/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The planner's parameters alone (plan.h), for the configuration that
 * makes them without the planner's other types. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* syncfs passes for one filesystem type. */
struct wbg_fs_passes {
	char fstype[16];
	unsigned passes;
};

/* What the planner takes from the configuration's [flush] section
 * (config_plan_params()); pointers into it, valid while it is. */
struct wbg_plan_params {
	bool inodes;                        /* inode_flush = on: by inode where a set is complete */
	bool block_devices;                 /* block_devices: a block device's own page cache too */
	const char *exclude_fstypes;        /* exclude_fstypes: globs, blank-separated */
	const struct wbg_fs_passes *passes; /* passes_FSTYPE */
	size_t n_passes;
	unsigned default_passes; /* passes_default */
};
