/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tap.h"
#include "verdict.h"

static void write_file(const char *p, const char *s)
{
	FILE *f = fopen(p, "w");
	fputs(s, f);
	fclose(f);
}

int main(void)
{
	struct wbg_evidence e = { 0 };
	char dir[] = "/tmp/wbg-verdict.XXXXXX", p[256], ks[256];

	CHECK(verdict_dying_wb(&e) == WBG_VERDICT_UNKNOWN, "no evidence: unknown");
	e.enoent_to_dying = 10268;
	CHECK(verdict_dying_wb(&e) == WBG_VERDICT_MISSING, "only -ENOENT to dying targets: missing (stock)");
	e.ok_to_dying = 1475;
	e.enoent_to_dying = 2;
	CHECK(verdict_dying_wb(&e) == WBG_VERDICT_ACTIVE, "hits beside a few misses: active (patched)");
	e = (struct wbg_evidence){ .sym_lookup_dying = true, .enoent_to_dying = 5 };
	CHECK(verdict_dying_wb(&e) == WBG_VERDICT_ACTIVE, "the symbol is enough");
	e = (struct wbg_evidence){ 0 };
	CHECK(verdict_bdev_flush(&e) == WBG_VERDICT_MISSING, "no bdev patch");
	e.tp_dev_field = true;
	CHECK(verdict_bdev_flush(&e) == WBG_VERDICT_ACTIVE, "the tracepoint's dev field");
	e = (struct wbg_evidence){ .bdev_flushes = 3 };
	CHECK(verdict_bdev_flush(&e) == WBG_VERDICT_ACTIVE, "a bdev flush seen");
	e = (struct wbg_evidence){ .sym_bdev_flush = true, .tp_dev_field = true, .bdev_dirty_shared_path = 40 };
	CHECK(verdict_bdev_flush(&e) == WBG_VERDICT_MISSING && verdict_bdev_dormant(&e),
	      "code present, but foreign bdev dirtying took the owner-wb path: missing (dormant)");
	e.bdev_dirty_own_path = 1;
	CHECK(verdict_bdev_flush(&e) == WBG_VERDICT_ACTIVE && !verdict_bdev_dormant(&e), "one on its own path: active");
	e = (struct wbg_evidence){ .bdev_dirty_shared_path = 40 };
	CHECK(verdict_bdev_flush(&e) == WBG_VERDICT_MISSING && !verdict_bdev_dormant(&e),
	      "no code, owner-wb path: missing, not dormant");
	e = (struct wbg_evidence){ .lookup_dying_found = 1, .enoent_to_dying = 40 };
	CHECK(verdict_dying_wb(&e) == WBG_VERDICT_ACTIVE, "a dying wb found by the fallback");

	if (!mkdtemp(dir))
		return 1;
	snprintf(ks, sizeof(ks), "%s/kallsyms", dir);
	write_file(ks, "ffffffff89cecae0 T wb_get_lookup\nffffffff89cecb40 T wb_get_lookup_dying\n"
		       "ffffffff89d00000 T bdev_flush_by_dev\n");
	snprintf(p, sizeof(p), "%s/events/writeback/flush_foreign", dir);
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "mkdir -p %s", p);
		if (system(cmd) != 0)
			return 1;
	}
	snprintf(p, sizeof(p), "%s/events/writeback/flush_foreign/format", dir);
	write_file(p, "name: flush_foreign\nformat:\n\tfield:char name[32];\toffset:8;\tsize:32;\tsigned:0;\n"
		      "\tfield:dev_t dev;\toffset:56;\tsize:4;\tsigned:0;\n");
	snprintf(ks, sizeof(ks), "%s/kallsyms", dir);
	e = (struct wbg_evidence){ 0 };
	evidence_read_static(ks, dir, -1, &e);
	CHECK(e.sym_lookup_dying && e.sym_bdev_flush && e.tp_dev_field, "static evidence from fixtures");
	e = (struct wbg_evidence){ 0 };
	evidence_read_static(ks, dir, 0, &e);
	CHECK(!e.tp_dev_field, "BTF without the dev field wins over the format file");
	e = (struct wbg_evidence){ 0 };
	evidence_read_static("/nonexistent", "/nonexistent", 1, &e);
	CHECK(e.tp_dev_field, "BTF with the dev field needs no tracefs");
	e = (struct wbg_evidence){ 0 };
	evidence_read_static("/nonexistent", "/nonexistent", -1, &e);
	CHECK(!e.sym_lookup_dying && !e.sym_bdev_flush && !e.tp_dev_field, "missing files: no evidence");
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return tap_done();
}
