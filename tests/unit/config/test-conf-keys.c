/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The key table is what the documents say: docs/configuration.md is the
 * table's reference as generated; wbguard.conf(5) and the shipped
 * conf/wbguard.conf name every key in its section; the shipped file's
 * commented defaults are the built-in ones, key by key; every value the
 * table formats parses back to itself (what a reload's "applies at
 * restart" relies on).
 *
 * test-conf-keys --reference: writes the reference to stdout.
 * test-conf-keys CONFIGURATION.md WBGUARD.CONF.5.SCD WBGUARD.CONF */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf-keys.h"
#include "conf.h"
#include "expiry-policy.h"
#include "wbg-flush.h"
#include "wbguard.h"
#include "wbg-base.h"
#include "tap.h"

/* syncfs passes for fstype, as the planner takes them from c */
static unsigned passes_for(const struct wbg_config *c, const char *fstype)
{
	struct wbg_plan_params pp = config_plan_params(c);

	return plan_passes_for(&pp, fstype);
}

static char *slurp(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char *text;
	size_t n;

	if (!f)
		return NULL;
	text = calloc(1, 256 * 1024);
	if (!text)
		return NULL;
	n = fread(text, 1, 256 * 1024 - 1, f);
	text[n] = 0;
	return text;
}

/* The part of text from the line that starts with head to the next line
 * that starts with next_head ("" = to the end). */
static char *section_of(const char *text, const char *head, const char *next_head)
{
	const char *a = strncmp(text, head, strlen(head)) == 0 ? text : NULL, *b;

	for (const char *p = text; !a && (p = strchr(p, '\n')); p++)
		if (strncmp(p + 1, head, strlen(head)) == 0)
			a = p + 1;
	if (!a)
		return NULL;
	b = *next_head ? strstr(a + 1, next_head) : NULL;
	return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

/* Whether a line of part starts with prefix. */
static bool has_line(const char *part, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(part, prefix, n) == 0)
		return true;
	for (const char *p = part; (p = strchr(p, '\n')); p++)
		if (strncmp(p + 1, prefix, n) == 0)
			return true;
	return false;
}

static void check_documents(const char *man_path, const char *shipped_path)
{
	_cleanup_free_ char *man = slurp(man_path), *shipped = slurp(shipped_path);
	char missing_man[2048] = "", missing_shipped[2048] = "", want[128];
	size_t n;
	const struct wbg_conf_key *keys = conf_keys(&n);

	CHECK(man && shipped, "wbguard.conf(5) and conf/wbguard.conf read");
	if (!man || !shipped)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *k = keys[i].key;
		bool family = keys[i].type == WBG_CONF_PASSES;
		char head[64], man_head[64];
		_cleanup_free_ char *man_part = NULL, *shipped_part = NULL;

		snprintf(man_head, sizeof(man_head), "# [%s]", keys[i].section);
		snprintf(head, sizeof(head), "[%s]", keys[i].section);
		man_part = section_of(man, man_head, "\n# ");
		shipped_part = section_of(shipped, head, "\n[");
		snprintf(want, sizeof(want), "*%s*", family ? "passes_" : k);
		if (!man_part || !has_line(man_part, want))
			snprintf(missing_man + strlen(missing_man), sizeof(missing_man) - strlen(missing_man),
				 " [%s] %s", keys[i].section, k);
		snprintf(want, sizeof(want), "#%s =", family ? "passes_default" : k);
		if (!shipped_part || !has_line(shipped_part, want))
			snprintf(missing_shipped + strlen(missing_shipped),
				 sizeof(missing_shipped) - strlen(missing_shipped), " [%s] %s", keys[i].section, k);
	}
	CHECK(!*missing_man, "wbguard.conf(5) names every key in its section (missing:%s)", missing_man);
	CHECK(!*missing_shipped, "conf/wbguard.conf shows every key in its section (missing:%s)", missing_shipped);
}

/* "#key = value" lines become "key = value"; "# prose" stays prose. */
static void check_shipped_defaults(const char *shipped_path)
{
	_cleanup_free_ char *text = slurp(shipped_path);
	struct wbg_config def, shipped, uncommented;
	char differ[2048] = "", a[512], b[512];
	size_t n;
	const struct wbg_conf_key *keys = conf_keys(&n);

	if (!text)
		return;
	config_init(&def);
	config_init(&shipped);
	config_init(&uncommented);
	CHECK(config_parse_file(&shipped, shipped_path) == 0, "conf/wbguard.conf parses");
	for (char *p = text; (p = strstr(p, "\n#")); p++)
		if (p[2] != ' ' && p[2] != '\n' && p[2] != '/')
			memmove(p + 1, p + 2, strlen(p + 2) + 1);
	CHECK(config_parse_string(&uncommented, "uncommented", text) == 0, "every documented key parses");
	for (size_t i = 0; i < n; i++)
		if (strcmp(conf_key_format(&keys[i], &def, a, sizeof(a)),
			   conf_key_format(&keys[i], &uncommented, b, sizeof(b))) != 0)
			snprintf(differ + strlen(differ), sizeof(differ) - strlen(differ), " [%s] %s (%s, not %s)",
				 keys[i].section, keys[i].key, b, a);
	CHECK(!*differ, "every documented default is the built-in one (%zu keys; differ:%s)", n, differ);
	CHECK(uncommented.n_policies == 0, "the documented example policy is not a policy");
	config_done(&def);
	config_done(&shipped);
	config_done(&uncommented);
}

static void check_round_trip(void)
{
	struct wbg_config def, again;
	char a[512], b[512], bad[1024] = "";
	size_t n;
	const struct wbg_conf_key *keys = conf_keys(&n);

	config_init(&def);
	config_init(&again);
	for (size_t i = 0; i < n; i++) {
		const char *key = keys[i].type == WBG_CONF_PASSES ? "passes_ext4" : keys[i].key;
		const char *v = conf_key_format(&keys[i], &def, a, sizeof(a));

		if (keys[i].type == WBG_CONF_PASSES)
			v = "3";
		if (conf_key_set(&keys[i], &again, key, v) < 0 ||
		    (keys[i].type != WBG_CONF_PASSES &&
		     strcmp(v, conf_key_format(&keys[i], &again, b, sizeof(b))) != 0))
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), " %s", keys[i].key);
	}
	CHECK(!*bad, "every key's default, formatted, parses back to itself (not:%s)", bad);
	CHECK(passes_for(&again, "ext4") == 3, "passes_ext4 set through the table");
	config_done(&def);
	config_done(&again);
}

static void check_reference(const char *path)
{
	_cleanup_free_ char *have = slurp(path), *want = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&want, &len);

	if (!f)
		return;
	conf_keys_reference(f);
	fclose(f);
	CHECK(have && strcmp(have, want) == 0,
	      "docs/configuration.md is the key table's reference (regenerate: build/tests/test-conf-keys --reference "
	      ">docs/configuration.md)");
}

/* The defaults are the table's: each key's .def is what a configuration
 * before any file holds, written as the reference writes it; the ones
 * that come from the build or the BPF side are those constants. */
static void check_table_defaults(void)
{
	struct wbg_config def;
	char a[512], differ[1024] = "";
	size_t n;
	const struct wbg_conf_key *keys = conf_keys(&n);

	config_init(&def);
	for (size_t i = 0; i < n; i++)
		if (keys[i].def && strcmp(conf_key_format(&keys[i], &def, a, sizeof(a)), keys[i].def) != 0)
			snprintf(differ + strlen(differ), sizeof(differ) - strlen(differ), " [%s] %s", keys[i].section,
				 keys[i].key);
	CHECK(!*differ, "every key's default in the table is the configuration's at start, as written (differ:%s)", differ);
	CHECK(strcmp(def.state_dir, WBG_RUN_DIR) == 0, "state_dir: the build's run directory");
	CHECK(def.bpf_inode_records == WBG_INODES_MAX, "inode_records: the BPF table's size");
	CHECK(def.max_inodes_per_tenant == WBG_INODES_MAX / 4, "max_inodes_per_tenant: a quarter of the BPF table");
	CHECK(def.bpf_dirtied_cgroups == WBG_DIRTIED_CGROUPS_MAX, "dirtied_cgroups: the BPF LRU's size");
	CHECK(def.expiry_max_cs == WBG_EXPIRY_MAX_CS, "[expiry] max: the longest expiry there is");
	CHECK(def.n_runtime_dirs == 5, "runtime_state_dirs: the five runtimes' state roots");
	config_done(&def);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--reference") == 0) {
		conf_keys_reference(stdout);
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: %s --reference | CONFIGURATION.md WBGUARD.CONF.5.SCD WBGUARD.CONF\n", argv[0]);
		return 2;
	}
	check_reference(argv[1]);
	check_documents(argv[2], argv[3]);
	check_shipped_defaults(argv[3]);
	check_round_trip();
	check_table_defaults();
	{
		struct wbg_config c;

		config_init(&c);
		CHECK(config_parse_string(&c, "t", "[flush]\ntimeout_sec = 2m\nreflush_sec = 500ms\n") == 0 &&
			      c.timeout_usec == 120000000 && c.reflush_usec == 500000,
		      "*_sec keys take durations with units (2m, 500ms)");
		CHECK(config_parse_string(&c, "t", "[expiry]\nboost_window_sec = 90s\nboost = 5s\n") == 0 &&
			      c.boost_window_usec == 90000000 && c.boost_cs == 500,
		      "[expiry]'s *_sec and centisecond keys take the same units");
		config_done(&c);
	}
	return tap_done();
}
