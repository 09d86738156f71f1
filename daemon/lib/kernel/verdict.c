/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "verdict.h"

enum wbg_verdict verdict_dying_wb(const struct wbg_evidence *e)
{
	if (e->sym_lookup_dying || e->lookup_dying_found > 0 || e->ok_to_dying > 0)
		return WBG_VERDICT_ACTIVE;
	if (e->enoent_to_dying > 0)
		return WBG_VERDICT_MISSING;
	return WBG_VERDICT_UNKNOWN;
}

static bool bdev_code(const struct wbg_evidence *e)
{
	return e->sym_bdev_flush || e->tp_dev_field;
}

bool verdict_bdev_dormant(const struct wbg_evidence *e)
{
	return bdev_code(e) && e->bdev_flushes == 0 && e->bdev_dirty_own_path == 0 && e->bdev_dirty_shared_path > 0;
}

enum wbg_verdict verdict_bdev_flush(const struct wbg_evidence *e)
{
	if (e->bdev_flushes > 0 || e->bdev_dirty_own_path > 0)
		return WBG_VERDICT_ACTIVE;
	if (e->bdev_dirty_shared_path > 0)
		return WBG_VERDICT_MISSING;
	return bdev_code(e) ? WBG_VERDICT_ACTIVE : WBG_VERDICT_MISSING;
}

const char *wbg_verdict_to_string(enum wbg_verdict v)
{
	static const char *const s[] = { "unknown", "active", "missing" };

	return v < _WBG_VERDICT_MAX ? s[v] : "unknown";
}

void evidence_read_static(const char *kallsyms, const char *tracefs, int has_dev_field, struct wbg_evidence *e)
{
	_cleanup_free_ char *fmt = NULL;
	char p[512];

	e->sym_lookup_dying = kallsyms_has(kallsyms, "wb_get_lookup_dying") > 0;
	e->sym_bdev_flush = kallsyms_has(kallsyms, "bdev_flush_by_dev") > 0 ||
			    kallsyms_has(kallsyms, "bdev_writeback_by_dev") > 0;
	if (has_dev_field >= 0) {
		e->tp_dev_field = has_dev_field > 0;
		return;
	}
	/* "field:dev_t dev;" in the event's format */
	snprintf(p, sizeof(p), "%s/events/writeback/flush_foreign/format", tracefs);
	e->tp_dev_field = read_small_file_at(AT_FDCWD, p, 64 * 1024, &fmt) >= 0 && strstr(fmt, " dev;") != NULL;
}

void verdicts_init(struct wbg_verdicts *v, const struct wbg_evidence *static_evidence)
{
	*v = (struct wbg_verdicts){ .evidence = *static_evidence, .dying_wb = _WBG_VERDICT_MAX,
				    .bdev_flush = _WBG_VERDICT_MAX }; /* so the first update logs */
}

void verdicts_update(struct wbg_verdicts *v, const struct wbg_evidence *observed, uint64_t now)
{
	const struct wbg_evidence *e = &v->evidence;
	enum wbg_verdict d, b;

	v->checked_usec = now;
	if (observed)
		v->evidence = *observed;
	d = verdict_dying_wb(e);
	b = verdict_bdev_flush(e);
	if (d != v->dying_wb)
		log_info("Kernel dying-wb fallback: %s (symbol %s, dying wbs found %" PRIu64
			 ", foreign flushes to dying wbs: %" PRIu64 " ok, %" PRIu64 " -ENOENT)",
			 wbg_verdict_to_string(d), e->sym_lookup_dying ? "present" : "absent", e->lookup_dying_found,
			 e->ok_to_dying, e->enoent_to_dying);
	if (b != v->bdev_flush)
		log_info("Kernel flushes foreign bdev mappings separately: %s%s (symbol %s, flush_foreign dev field %s, "
			 "bdev flushes seen %" PRIu64 ", foreign bdev dirtying on its own path %" PRIu64
			 ", on the owner-wb path %" PRIu64 ")",
			 wbg_verdict_to_string(b), verdict_bdev_dormant(e) ? " (code present but dormant)" : "",
			 e->sym_bdev_flush ? "present" : "absent", e->tp_dev_field ? "present" : "absent", e->bdev_flushes,
			 e->bdev_dirty_own_path, e->bdev_dirty_shared_path);
	v->dying_wb = d;
	v->bdev_flush = b;
}

/* A verdict as a family: one series per state, 1 on the one that holds. */
static void verdict_family(FILE *f, const char *name, const char *help, enum wbg_verdict held)
{
	metric_family(f, name, "gauge", help);
	for (unsigned k = 0; k < _WBG_VERDICT_MAX; k++)
		fprintf(f, "%s{state=\"%s\"} %d\n", name, wbg_verdict_to_string(k), held == k);
}

void verdicts_metrics(FILE *f, const struct wbg_verdicts *v)
{
	const struct wbg_evidence *e = &v->evidence;

	/* the counts the verdicts rest on are the kernel's own counters
	 * (wbguard_kernel_foreign_flushes_total, _dying_wb_lookups_total,
	 * _bdev_flushes_total, _foreign_dirty_total); here the verdicts and
	 * what the kernel's code shows */
	verdict_family(f, "wbguard_kernel_dying_wb_fallback",
		       "Whether the kernel's foreign flushes reach dying cgroup wbs (the dying-wb fallback): 1 on "
		       "the state that holds.",
		       v->dying_wb);
	metric_value(f, "wbguard_kernel_dying_wb_fallback_symbol", "gauge",
		     "1 when the kernel has the dying-wb fallback's lookup (wb_get_lookup_dying).", e->sym_lookup_dying);
	verdict_family(f, "wbguard_kernel_bdev_foreign_flush",
		       "Whether the kernel writes back foreign block-device page caches on their own (the separate "
		       "bdev flush): 1 on the state that holds.",
		       v->bdev_flush);
	metric_value(f, "wbguard_kernel_bdev_foreign_flush_symbol", "gauge",
		     "1 when the kernel has the separate bdev flush's function (bdev_flush_by_dev or "
		     "bdev_writeback_by_dev).",
		     e->sym_bdev_flush);
	metric_value(f, "wbguard_kernel_bdev_foreign_flush_dev_field", "gauge",
		     "1 when writeback:flush_foreign carries a dev field (the separate bdev flush's tracepoints).",
		     e->tp_dev_field);
	metric_value(f, "wbguard_kernel_bdev_foreign_flush_dormant", "gauge",
		     "1 when the separate bdev flush's code is there but the kernel took the owner-wb path anyway.",
		     verdict_bdev_dormant(e));
}
