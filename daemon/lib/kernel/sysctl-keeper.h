/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Holds vm.dirty_expire_centisecs lowered for whoever asks (pods with the
 * global mechanism, the handover boost), at the lowest value asked for and
 * never above the admin's, and never loses the admin's value: it is saved in
 * a state file (written atomically) before the first change, restored when
 * nobody holds it any more and at exit, and on the next start after a crash
 * (the state file says what the original was). A value the admin writes
 * while it is lowered is adopted as the new original, not overwritten.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WBG_SYSCTL_NAME "vm.dirty_expire_centisecs"
#define WBG_SYSCTL_HOLDERS_MAX 256

struct wbg_sysctl_holder {
	char id[160]; /* "boost", or a cgroup path */
	unsigned value;
};

struct wbg_sysctl {
	char path[512];       /* <proc_sys>/vm/dirty_expire_centisecs */
	char state_path[512]; /* <state_dir>/sysctl.json */
	unsigned original;    /* the admin's value */
	unsigned written;     /* what we wrote, while lowered */
	bool lowered;
	struct wbg_sysctl_holder holders[WBG_SYSCTL_HOLDERS_MAX];
	size_t n_holders;
	/* counters */
	uint64_t changes, restores, admin_changes, errors, recovered;
	int last_error; /* negative errno of the last failure, 0 if none */
};

/* Where the sysctl and the state file are; nothing read or written. */
void sysctl_keeper_init(struct wbg_sysctl *k, const char *proc_sys, const char *state_dir);
/* Reads the current value; with a state file left by a previous run, puts
 * the original back (or, if the admin changed the value meanwhile, keeps
 * theirs) and removes the file. */
int sysctl_keeper_open(struct wbg_sysctl *k, const char *proc_sys, const char *state_dir);
/* Adds or updates a holder and applies the lowest value. */
int sysctl_keeper_hold(struct wbg_sysctl *k, const char *id, unsigned value);
/* Drops a holder (no-op if absent) and applies what is left. */
int sysctl_keeper_release(struct wbg_sysctl *k, const char *id);
/* Notices an admin's change while lowered (adopts it as the original).
 * Returns 1 if it found one. Call it before acting and now and then while
 * lowered: /proc/sys cannot be watched. */
int sysctl_keeper_check(struct wbg_sysctl *k);
/* Back to the admin's value, state file removed (at exit). Holders stay
 * recorded but no longer apply. */
int sysctl_keeper_restore(struct wbg_sysctl *k);
int sysctl_keeper_read(const struct wbg_sysctl *k, unsigned *ret);
