/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-util.h"
#include "macro.h"
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
