/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The shipped conf/wbguard.conf parses, and its commented defaults are the
 * built-in ones: uncommenting every key changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "macro.h"
#include "tap.h"

int main(int argc, char **argv)
{
	struct wbg_config def, shipped, uncommented;
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	FILE *f;

	if (argc < 2)
		return 1;
	config_init(&def);
	config_init(&shipped);
	CHECK(config_parse_file(&shipped, argv[1]) == 0, "conf/wbguard.conf parses");
	f = fopen(argv[1], "r");
	if (!f)
		return 1;
	text = calloc(1, 64 * 1024);
	n = fread(text, 1, 64 * 1024 - 1, f);
	fclose(f);
	text[n] = 0;
	/* "#key = value" lines become "key = value"; "# prose" stays prose. */
	for (char *p = text; (p = strstr(p, "\n#")); p++)
		if (p[2] != ' ' && p[2] != '\n' && p[2] != '/')
			memmove(p + 1, p + 2, strlen(p + 2) + 1);
	config_init(&uncommented);
	CHECK(config_parse_string(&uncommented, "uncommented", text) == 0, "every documented key parses");
	CHECK(strcmp(uncommented.cgroup_root, def.cgroup_root) == 0 && uncommented.workers == def.workers &&
		      uncommented.timeout_usec == def.timeout_usec && uncommented.max_inodes == def.max_inodes &&
		      uncommented.inode_flush == def.inode_flush && uncommented.mitigation == def.mitigation &&
		      uncommented.bpf == def.bpf && uncommented.flush_bdev == def.flush_bdev &&
		      uncommented.scratch_cycle == def.scratch_cycle && uncommented.log_level == def.log_level &&
		      strcmp(uncommented.state_dir, def.state_dir) == 0 && uncommented.n_roots == 0 &&
		      strcmp(uncommented.metrics_listen, def.metrics_listen) == 0 &&
		      strcmp(uncommented.metrics_textfile, def.metrics_textfile) == 0 &&
		      uncommented.watch_max == def.watch_max && uncommented.watch_max_per_tenant == def.watch_max_per_tenant &&
		      uncommented.watch_max_age_usec == def.watch_max_age_usec,
	      "documented defaults are the built-in defaults");
	{
		unsigned nd, nu;
		const char *const *d = config_runtime_dirs(&def, &nd), *const *u = config_runtime_dirs(&uncommented, &nu);
		bool same = nd == nu;

		for (unsigned i = 0; same && i < nd; i++)
			same = strcmp(d[i], u[i]) == 0;
		CHECK(same && strcmp(uncommented.proc_sys, def.proc_sys) == 0 && uncommented.flush == def.flush &&
			      uncommented.expiry_default_cs == def.expiry_default_cs &&
			      uncommented.expiry_mech == def.expiry_mech && uncommented.boost_cs == def.boost_cs &&
			      uncommented.boost_window_usec == def.boost_window_usec && uncommented.n_policies == 0,
		      "documented [expiry] defaults are the built-in ones");
	}
	CHECK(config_passes_for(&uncommented, "ext4") == 2 && config_passes_for(&uncommented, "xfs") == 1 &&
		      config_passes_for(&uncommented, "btrfs") == 1 && config_passes_for(&uncommented, "f2fs") == 1,
	      "documented syncfs passes are the built-in ones");
	config_done(&def);
	config_done(&shipped);
	config_done(&uncommented);
	return tap_done();
}
