/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control API's arguments as wbguardd handles them once sd-bus has
 * decoded the message: RegisterContainer (id, cgroup, bundle, annotations)
 * and FlushCgroup/FlushContainer (a cgroup path or an id) against the
 * container table. Fields are NUL-separated in the input. */
#include "wbg-runtime.h"
#include "fuzz.h"
#include "wbg-base.h"

#define FIELDS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wbg_containers t;
	static int ready;
	_cleanup_free_ char *s = fuzz_string(data, size);
	const char *f[FIELDS_MAX];
	size_t n = 0;
	char rel[4096] = "", why[256] = "";

	if (!s)
		return 0;
	if (!ready) {
		if (containers_init(&t, 64) < 0)
			abort();
		ready = 1;
	}
	for (size_t i = 0; i < size && n < FIELDS_MAX; i++)
		if (i == 0 || s[i - 1] == 0)
			f[n++] = s + i;
	if (n < 3)
		return 0;
	/* manager_register_container's own check, then the table */
	if (containers_check(f[0], f[1], (n - 3) / 2, rel, sizeof(rel), why, sizeof(why)) == 0) {
		size_t pairs = (n - 3) / 2;
		const char *keys[FIELDS_MAX], *values[FIELDS_MAX];

		for (size_t i = 0; i < pairs; i++) {
			keys[i] = f[3 + 2 * i];
			values[i] = f[4 + 2 * i];
		}
		if (containers_register(&t, rel, f[0], f[2], keys, values, pairs) < 0)
			abort(); /* only ENOMEM fails */
		if (!containers_find(&t, rel) || !containers_find_id(&t, f[0]))
			abort(); /* what was registered is found */
	} else if (!why[0])
		abort(); /* a refusal says why */
	(void)containers_find_id(&t, f[2]);
	if (n > 3 && (f[3][0] & 1))
		containers_forget(&t, rel);
	return 0;
}
