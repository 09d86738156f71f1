/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The OCI runtimes' state files, which a container's runtime writes from
 * what the container's config says: crun's <root>/<id>/status and its copy
 * of config.json, runc's <root>/<id>/state.json. The first byte picks the
 * runtime (and, for crun, how the rest splits between the two files). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "wbg-base.h"
#include "wbg-runtime.h"

static char dir[] = "/tmp/wbg-fuzz-rt-XXXXXX";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char crun[300], runc[300], p[300];
	const char *roots[2];
	struct wbg_container_state st;

	snprintf(crun, sizeof(crun), "%s/crun", dir);
	snprintf(runc, sizeof(runc), "%s/runc", dir);
	if (!ready) {
		log_set_max_level(-1);
		fuzz_tmp_dir(dir);
		snprintf(crun, sizeof(crun), "%s/crun", dir);
		snprintf(runc, sizeof(runc), "%s/runc", dir);
		mkdir(crun, 0700);
		mkdir(runc, 0700);
		snprintf(p, sizeof(p), "%s/c1", crun);
		mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/c1", runc);
		mkdir(p, 0700);
		ready = 1;
	}
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		size_t half = (size - 1) * (data[0] >> 1) / 128;

		fuzz_put_file(dir, "crun/c1/status", data + 1, half);
		fuzz_put_file(dir, "crun/c1/config.json", data + 1 + half, size - 1 - half);
		roots[0] = crun;
	} else {
		fuzz_put_file(dir, "runc/c1/state.json", data + 1, size - 1);
		roots[0] = runc;
	}
	roots[1] = NULL;
	if (runtime_state_find(roots, 1, "/sys/fs/cgroup", "kubepods.slice/pod1/ctr", &st) > 0) {
		(void)runtime_state_annotation(&st, "wbguard.io/dirty-expire");
		runtime_state_done(&st);
	}
	return 0;
}
