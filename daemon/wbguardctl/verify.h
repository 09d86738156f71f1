/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The active probe behind `wbguardctl verify`: the stall's minimal recipe
 * at small scale. A private scratch cgroup's "old" child appends to a few files
 * and exits with them dirty, is removed, and a "new" sibling keeps appending
 * under a small parent memory.max until the kernel makes a foreign flush to
 * the dying wb; what that returns (counted by BPF) is the verdict's evidence.
 * Everything it creates is removed again, also when interrupted.
 */
#pragma once

#include <stdbool.h>

#include "wbg-kernel.h"

struct verify_opts {
	const char *cgroup_root;
	const char *dir;       /* on a disk-backed filesystem; NULL: the first of /var/tmp, /var/lib, / that is */
	double timeout_s;      /* give up on seeing a foreign flush after this */
	volatile int *stop;    /* set by a signal handler: clean up and return */
};

struct verify_result {
	struct wbg_evidence evidence;
	enum wbg_verdict dying_wb, bdev_flush;
	double seconds;
	bool saw_flush; /* a foreign flush to the dying wb happened */
};

int verify_run(const struct verify_opts *o, struct verify_result *ret);

/* verify's exit status, as node-problem-detector's custom plugins report
 * theirs: 0 OK (the fallback is active), 1 NonOK (missing: wbguardd is
 * needed), any other Unknown. "Cannot tell" has a code of its own, apart
 * from the usage error (2) every command shares; run: verify_run's result. */
#define VERIFY_EXIT_UNKNOWN 5
static inline int verify_exit_status(int run, enum wbg_verdict dying_wb)
{
	if (run < 0)
		return VERIFY_EXIT_UNKNOWN;
	return dying_wb == WBG_VERDICT_ACTIVE ? 0 : dying_wb == WBG_VERDICT_MISSING ? 1 : VERIFY_EXIT_UNKNOWN;
}
