/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who a cgroup belongs to, from its path alone: any bytes a cgroup name can
 * hold (spaces, newlines, non-UTF-8, very long). */
#include "wbg-cgroup.h"
#include "fuzz.h"
#include "wbg-base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *s = fuzz_string(data, size);
	struct wbg_identity id;

	if (s)
		cgroup_identity_parse(s, &id);
	return 0;
}
