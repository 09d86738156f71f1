/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What an OCI hook is handed: the state on stdin and config.json; and the
 * cgroup path a config names. The first byte picks which. */
#include "fuzz.h"
#include "wbg-base.h"
#include "wbg-runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *s = NULL;
	char err[512], cg[4096];

	if (size < 1)
		return 0;
	s = fuzz_string(data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 3) {
	case 0: {
		struct oci_state st;

		if (oci_state_parse(s, size - 1, &st, err, sizeof(err)) == 0)
			oci_state_done(&st);
		break;
	}
	case 1: {
		static struct oci_config c; /* large: not on the stack */

		if (oci_config_parse(s, size - 1, &c, err, sizeof(err)) == 0) {
			if (c.cgroups_path[0])
				(void)oci_cgroup_path(c.cgroups_path, cg, sizeof(cg));
			oci_config_done(&c);
		}
		break;
	}
	default:
		(void)oci_cgroup_path(s, cg, sizeof(cg));
	}
	return 0;
}
