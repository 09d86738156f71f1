/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What wbguardd reads back from its own state directory after a crash or
 * a kill (anyone who can write there, or a torn write, decides the bytes):
 * pending-<id>.json, sysctl.json, handover-ids. The first byte picks which;
 * the rest is the file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "wbg-base.h"
#include "wbg-handover.h"
#include "wbg-kernel.h"

static char dir[] = "/tmp/wbg-fuzz-state-XXXXXX";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char p[256];

	if (!ready) {
		log_set_max_level(-1);
		fuzz_tmp_dir(dir);
		snprintf(p, sizeof(p), "%s/vm", dir);
		mkdir(p, 0700);
		ready = 1;
	}
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: {
		struct wbg_pending *v = NULL;
		size_t n = 0;

		fuzz_put_file(dir, "pending-7.json", data + 1, size - 1);
		if (pending_load(dir, &v, &n) == 0) {
			pending_free(v, n);
			free(v);
		}
		(void)pending_max_id(dir);
		pending_drop(dir, 7);
		break;
	}
	case 1: {
		struct wbg_sysctl k;

		fuzz_put_file(dir, "vm/dirty_expire_centisecs", (const uint8_t *)"3000\n", 5);
		fuzz_put_file(dir, "sysctl.json", data + 1, size - 1);
		(void)sysctl_keeper_open(&k, dir, dir);
		snprintf(p, sizeof(p), "%s/sysctl.json", dir);
		unlink(p);
		break;
	}
	default: {
		struct wbg_ids ids;

		fuzz_put_file(dir, "handover-ids", data + 1, size - 1);
		ids_open(&ids, dir, 0);
		(void)ids_next(&ids);
	}
	}
	return 0;
}
