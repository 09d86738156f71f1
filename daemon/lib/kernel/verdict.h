/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Does this kernel reach dying wbs (the dying-wb fallback) and flush foreign
 * block-device mappings separately (the separate bdev flush)? Decided from evidence, never from a version
 * number: symbols, tracepoint formats, and what the kernel's foreign flushes
 * actually returned for dying targets.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum wbg_verdict { WBG_VERDICT_UNKNOWN, WBG_VERDICT_ACTIVE, WBG_VERDICT_MISSING, _WBG_VERDICT_MAX };

struct wbg_evidence {
	/* dying-wb fallback */
	bool sym_lookup_dying;       /* wb_get_lookup_dying in kallsyms (v1 patch) */
	uint64_t ok_to_dying;        /* cgroup_writeback_by_id() == 0 for a dying target */
	uint64_t enoent_to_dying;    /* == -ENOENT for a dying target */
	uint64_t lookup_dying_found; /* wb_get_lookup_dying() returned a wb */
	/* separate flushes of foreign bdev mappings */
	bool sym_bdev_flush;         /* bdev_flush_by_dev or bdev_writeback_by_dev */
	bool tp_dev_field;           /* writeback:flush_foreign has a "dev" field */
	uint64_t bdev_flushes;       /* ... and the kernel was seen calling it */
	/* foreign dirtying of a block device's page cache, as the kernel took it */
	uint64_t bdev_dirty_own_path;    /* on the separate bdev flush's path (dev != 0) */
	uint64_t bdev_dirty_shared_path; /* on the owner-wb path (dev 0, or no dev) */
};

/* Active on any sign of the fallback: its symbol, a dying-wb lookup that
 * found one, or one foreign flush that
 * reached a dying wb (a patched kernel still misses a few when the wb has no
 * dirty IO at that instant, so misses beside hits do not count against it).
 * Missing when flushes to dying targets were seen and every one failed.
 * Unknown without evidence either way. */
enum wbg_verdict verdict_dying_wb(const struct wbg_evidence *e);
/* What the kernel did decides first: active once it took the separate
 * bdev flush's path
 * (a bdev flush, or a foreign bdev dirtying with dev set); missing once a
 * foreign bdev dirtying went down the owner-wb path although the code is
 * there (dormant: seen on a build whose workqueue is never allocated).
 * Without such observations the code decides: active with the patch's
 * symbol or tracepoint field, missing without. */
enum wbg_verdict verdict_bdev_flush(const struct wbg_evidence *e);
/* The code is there but the kernel did not use it. */
bool verdict_bdev_dormant(const struct wbg_evidence *e);
const char *wbg_verdict_to_string(enum wbg_verdict v);

/* The static evidence: kallsyms, and whether flush_foreign has a dev field,
 * from the running kernel's BTF (has_dev_field >= 0) or else the event's
 * format file under tracefs. Paths are given so tests can use fixtures;
 * missing files leave the fields false. */
void evidence_read_static(const char *kallsyms, const char *tracefs, int has_dev_field, struct wbg_evidence *e);

/* The verdicts as wbguardd holds them: refreshed on a timer and at a
 * handover's end, never by a reader (a scrape, a status call, Verify). */
struct wbg_verdicts {
	struct wbg_evidence evidence;
	enum wbg_verdict dying_wb, bdev_flush;
	uint64_t checked_usec;
};

/* Unknown, and logged at the first update. */
void verdicts_init(struct wbg_verdicts *v, const struct wbg_evidence *static_evidence);
/* New observed evidence (bpf_evidence NULL: none, only the static part);
 * the verdicts follow, and a change is logged. */
void verdicts_update(struct wbg_verdicts *v, const struct wbg_evidence *observed, uint64_t now);
/* Their metric families (wbguard_kernel_*). */
void verdicts_metrics(FILE *f, const struct wbg_verdicts *v);
