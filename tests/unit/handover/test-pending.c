/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "wbg-base.h"
#include "pending.h"
#include "tap.h"

int main(void)
{
	char dir[] = "/tmp/wbg-pending-XXXXXX", p[256];
	dev_t devs[] = { makedev(253, 0), makedev(7, 1) };
	bool bdev[] = { false, true };
	struct wbg_pending *v = NULL;
	size_t n = 99;
	FILE *f;

	log_set_max_level(-1);
	if (!mkdtemp(dir))
		return 1;
	CHECK(pending_load(dir, &v, &n) == 0 && n == 0, "an empty directory: nothing pending");
	CHECK(pending_save(dir, 7, "kubepods.slice/p 1\n", 4242, devs, bdev, 2) == 0, "save");
	CHECK(pending_save(dir, 8, "x", 1, NULL, NULL, 0) == 0, "save one without targets");
	{
		char rec[512];
		struct stat st;

		snprintf(rec, sizeof(rec), "%s/pending-7.json", dir);
		CHECK(stat(rec, &st) == 0 && (st.st_mode & 0777) == 0640, "a pending record is 0640 (it names a tenant's cgroup)");
	}
	snprintf(p, sizeof(p), "%s/pending-9.json", dir);
	f = fopen(p, "w");
	fputs("{\"id\": 9, \"cgroup\": ", f); /* a write cut short */
	fclose(f);
	CHECK(pending_load(dir, &v, &n) == 0 && n == 2, "load: two records, the truncated one skipped (%zu)", n);
	CHECK(access(p, F_OK) != 0, "and the truncated one removed");
	for (size_t i = 0; i < n; i++)
		if (v[i].id == 7)
			CHECK(v[i].cgroup_id == 4242 && strcmp(v[i].path, "kubepods.slice/p 1\n") == 0 && v[i].n == 2 &&
				      v[i].devs[0] == makedev(253, 0) && !v[i].bdev[0] && v[i].devs[1] == makedev(7, 1) &&
				      v[i].bdev[1],
			      "record 7 as saved (odd cgroup name kept)");
	pending_free(v, n);
	free(v);
	pending_drop(dir, 7);
	pending_drop(dir, 8);
	CHECK(pending_load(dir, &v, &n) == 0 && n == 0, "dropped: nothing pending");
	free(v);
	CHECK(pending_load("/nonexistent/wbg", &v, &n) == 0 && n == 0, "no state directory: nothing pending");

	/* Handover ids across restarts: a new run never gives an id an
	 * earlier run gave (a restart used to start at 1 again, and recovery
	 * dropped the pending record of the handover it had just started). */
	{
		struct wbg_ids ids;
		uint64_t a, b, c;

		ids_open(&ids, dir, 0);
		a = ids_next(&ids);
		b = ids_next(&ids);
		CHECK(a == 1 && b == 2, "a first run counts from 1 (%llu, %llu)", (unsigned long long)a,
		      (unsigned long long)b);
		ids_open(&ids, dir, 0); /* killed, started again */
		c = ids_next(&ids);
		CHECK(c > b, "after a restart the next id is new (%llu)", (unsigned long long)c);
		for (int i = 0; i < WBG_IDS_BLOCK + 10; i++)
			c = ids_next(&ids);
		ids_open(&ids, dir, 0);
		CHECK(ids_next(&ids) > c, "also past a reserved block");
		CHECK(pending_save(dir, 1000000, "x", 1, NULL, NULL, 0) == 0 && pending_max_id(dir) == 1000000,
		      "the highest pending id, by name");
		pending_drop(dir, 1000000);
		ids_open(&ids, dir, 1000000);
		CHECK(ids_next(&ids) == 1000001, "a pending record's id is a floor");
		{
			/* hand-made names and reservations at 2^64 - 1: ignored,
			 * ids never wrap to 0 */
			char q[300];
			FILE *hf;

			snprintf(q, sizeof(q), "%s/pending-18446744073709551615.json", dir);
			hf = fopen(q, "w");
			fclose(hf);
			CHECK(pending_max_id(dir) == 0, "a pending file's id above 2^53 is ignored");
			unlink(q);
			snprintf(q, sizeof(q), "%s/handover-ids", dir);
			hf = fopen(q, "w");
			fputs("18446744073709551615\n", hf);
			fclose(hf);
			ids_open(&ids, dir, 7);
			c = ids_next(&ids);
			CHECK(c == 8, "a reservation above 2^53 is ignored: ids go on from the floor (%llu)",
			      (unsigned long long)c);
		}
		snprintf(p, sizeof(p), "%s/handover-ids", dir);
		unlink(p);
		ids_open(&ids, "/nonexistent/wbg", 41);
		CHECK(ids_next(&ids) == 42 && ids_next(&ids) == 43 && ids.errors == 1,
		      "a reservation that cannot be saved is counted; ids go on");
	}
	rmdir(dir);
	return tap_done();
}
