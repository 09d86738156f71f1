/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf-keys.h"
#include "conf.h"
#include "wbg-flush.h"
#include "tap.h"

static char last_err[1024];

/* Runs config_parse_string with stderr captured into last_err. */
static int parse(struct wbg_config *c, const char *text)
{
	FILE *f = tmpfile();
	int saved = dup(2), r;
	size_t n;

	dup2(fileno(f), 2);
	r = config_parse_string(c, "test.conf", text);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(last_err, 1, sizeof(last_err) - 1, f);
	last_err[n] = 0;
	fclose(f);
	return r;
}

static char changed_keys[256];

static void note_changed(const struct wbg_conf_key *k, const char *running, const char *wanted)
{
	snprintf(changed_keys + strlen(changed_keys), sizeof(changed_keys) - strlen(changed_keys), "%s=%s->%s ",
		 k->key, running, wanted);
}

/* A reload keeps what applies only at restart, and says which changed. */
static void test_keep_restart_keys(void)
{
	struct wbg_config running, c;

	config_init(&running);
	config_init(&c);
	CHECK(config_parse_string(&c, "new", "[flush]\nworkers = 8\ntimeout_sec = 5\n[metrics]\nlisten = off\n"
					       "[daemon]\nroots = a b\n") == 0,
	      "the new file parses");
	CHECK(config_keep_restart_keys(&c, &running, note_changed) == 0, "restart keys kept");
	CHECK(c.workers == 4 && strcmp(c.metrics_listen, "127.0.0.1:9573") == 0 && c.n_roots == 0,
	      "workers, listen and roots keep their running values");
	CHECK(c.timeout_usec == 5000000, "a reloadable key takes the new value");
	CHECK(strcmp(changed_keys, "roots=->a b workers=4->8 listen=127.0.0.1:9573->off ") == 0,
	      "each kept change is reported (%s)", changed_keys);
	changed_keys[0] = 0;
	CHECK(config_keep_restart_keys(&c, &running, note_changed) == 0 && !changed_keys[0],
	      "nothing changed: nothing reported");
	config_done(&running);
	config_done(&c);
}

/* wbguardd --print-config: the effective configuration, in the file's
 * syntax; read back, it prints the same (every key, the passes per
 * filesystem type and the [policy] sections included). */
static void print_config(FILE *f, const void *c)
{
	conf_print(f, c);
}

static char *printed(const struct wbg_config *c)
{
	return tap_render(print_config, c);
}

static void test_print_round_trip(void)
{
	struct wbg_config a, b;
	char *one, *two;

	config_init(&a);
	config_init(&b);
	CHECK(parse(&a, "[flush]\nworkers = 7\npasses_xfs = 3\nmode = eager\n[metrics]\nallow_users = root 1000\n"
			"[policy \"kubepods.slice/*\"]\ndirty_expire = 5s\nmechanism = global\n"
			"[policy \"web.service\"]\nallow_annotation = yes\n") == 0,
	      "a configuration with policies parses");
	one = printed(&a);
	CHECK(strstr(one, "[flush]\n") && strstr(one, "workers = 7\n") && strstr(one, "passes_xfs = 3\n") &&
		      strstr(one, "passes_ext4 = 2\n") && strstr(one, "mode = eager\n") &&
		      strstr(one, "[policy \"kubepods.slice/*\"]\ndirty_expire = 500\nmechanism = global\n"),
	      "printed: set keys, defaults and policies");
	CHECK(config_parse_string(&b, "printed.conf", one) == 0, "the printed configuration parses");
	two = printed(&b);
	CHECK(strcmp(one, two) == 0, "read back, it prints the same");
	free(one);
	free(two);
	config_done(&a);
	config_done(&b);
}

static void write_file(const char *p, const char *s)
{
	FILE *f = fopen(p, "w");
	fputs(s, f);
	fclose(f);
}

/* syncfs passes for fstype, as the planner takes them from c */
static unsigned passes_for(const struct wbg_config *c, const char *fstype)
{
	struct wbg_plan_params pp = config_plan_params(c);

	return plan_passes_for(&pp, fstype);
}

int main(void)
{
	test_keep_restart_keys();
	test_print_round_trip();
	struct wbg_config c;
	char dir[] = "/tmp/wbg-conf.XXXXXX", p[256], d[256];

	config_init(&c);
	CHECK(passes_for(&c, "ext4") == 2 && passes_for(&c, "xfs") == 1 &&
		      passes_for(&c, "tmpfs") == 1,
	      "default passes: ext4 2, xfs 1, others 1");
	CHECK(parse(&c, "[daemon]\ncgroup_root = /tmp/cg\nroots = kubepods.slice  /system.slice\n"
			"log_level = debug\n[flush]\nworkers = 8\ntimeout_sec = 2.5\npasses_ext4 = 3\n"
			"passes_zfs = 1\ninode_flush = off\n[mitigation]\nmode = on\n[bpf]\nenable = no\n") == 0,
	      "a full file parses");
	CHECK(strcmp(c.cgroup_root, "/tmp/cg") == 0, "cgroup_root");
	CHECK(c.n_roots == 2 && strcmp(c.roots[0], "kubepods.slice") == 0 && strcmp(c.roots[1], "system.slice") == 0,
	      "roots, leading '/' dropped");
	CHECK(c.log_level == LOG_DEBUG && c.workers == 8 && c.timeout_usec == 2500000, "numbers");
	CHECK(passes_for(&c, "ext4") == 3 && passes_for(&c, "zfs") == 1, "passes per fs type");
	CHECK(c.inode_flush == WBG_INODE_FLUSH_OFF && c.mitigation == WBG_MITIGATION_ON && !c.bpf, "enums, bools");

	CHECK(parse(&c, "[flush]\nworkers = 0\n") < 0, "workers = 0 rejected");
	CHECK(strstr(last_err, "test.conf:2: [flush] workers = '0': expected a number from 1 to 64") != NULL,
	      "error names file, line, key and what was expected: %s", last_err);
	CHECK(c.workers == 8, "a bad file leaves the config as it was");
	CHECK(parse(&c, "# comment\n\n[daemon]\nfoo = 1\n[flush]\nworkers = 3\n") == 0 &&
		      strstr(last_err, "test.conf:4: unknown key 'foo' in section [daemon], ignored") &&
		      c.unknown_keys == 1 && c.workers == 3,
	      "an unknown key (a newer wbguard's): a warning naming it, counted, the rest applies: %s", last_err);
	CHECK(parse(&c, "[daemon]\nthis is not ini\n") == -EINVAL && strstr(last_err, "test.conf:2: syntax error"),
	      "syntax error: %s", last_err);
	CHECK(parse(&c, "[daemon]\ncgroup_root = relative/path\n") < 0 && strstr(last_err, "absolute path"),
	      "relative cgroup_root rejected");
	CHECK(parse(&c, "[daemon]\nroots = ../etc\n") < 0, "roots escaping the tree rejected");
	CHECK(parse(&c, "[flush]\ntimeout_sec = -1\n") < 0, "negative timeout rejected");
	CHECK(parse(&c, "[mitigation]\nmode = sometimes\n") < 0 && strstr(last_err, "auto, on or off"), "bad enum");
	CHECK(parse(&c, "[bpf]\nenable = maybe\n") < 0 && strstr(last_err, "yes or no"), "bad bool");
	CHECK(parse(&c, "[metrics]\nlisten = [::1]:9999\n") == 0 && strcmp(c.metrics_listen, "[::1]:9999") == 0,
	      "IPv6 listen address");
	CHECK(parse(&c, "[metrics]\nlisten = off\n") == 0 && c.metrics_listen[0] == 0, "metrics off");
	CHECK(parse(&c, "[metrics]\nlisten = localhost:80\n") < 0 && strstr(last_err, "ADDRESS:PORT"),
	      "a host name is no address: %s", last_err);
	CHECK(parse(&c, "[metrics]\nlisten = 127.0.0.1:70000\n") < 0, "port out of range");
	CHECK(parse(&c, "[metrics]\ntextfile = wbguard.prom\n") < 0 && strstr(last_err, "absolute path ending in .prom"),
	      "relative textfile rejected");
	CHECK(parse(&c, "[metrics]\ntextfile = /var/lib/x/wbguard.txt\n") < 0, "textfile not ending in .prom rejected");
	CHECK(parse(&c, "[metrics]\ntextfile = /var/lib/node_exporter/wbguard.prom\n") == 0 &&
		      strcmp(c.metrics_textfile, "/var/lib/node_exporter/wbguard.prom") == 0,
	      "textfile path");
	CHECK(parse(&c, "[metrics]\nnfd_features_file = /etc/kubernetes/node-feature-discovery/features.d/.wbguard\n") < 0 &&
		      strstr(last_err, "does not start with '.'"),
	      "an NFD feature file that is a dot file (nfd-worker skips those) rejected");
	CHECK(parse(&c, "[metrics]\nnfd_features_file = features.d/wbguard\n") < 0 &&
		      parse(&c, "[metrics]\nnfd_features_file = /etc/kubernetes/node-feature-discovery/features.d/\n") < 0,
	      "a relative NFD feature file, or a directory, rejected");
	CHECK(parse(&c, "[metrics]\nnfd_features_file = /etc/kubernetes/node-feature-discovery/features.d/wbguard\n") == 0 &&
		      strcmp(c.metrics_nfd_features, "/etc/kubernetes/node-feature-discovery/features.d/wbguard") == 0 &&
		      parse(&c, "[metrics]\nnfd_features_file =\n") == 0 && !c.metrics_nfd_features[0],
	      "NFD feature file path; empty: none");
	config_done(&c);

	/* Drop-ins override the main file in lexical order; a bad drop-in
	 * fails the whole load and names its own file. */
	if (!mkdtemp(dir))
		return 1;
	snprintf(p, sizeof(p), "%s/wbguard.conf", dir);
	snprintf(d, sizeof(d), "%s/conf.d", dir);
	mkdir(d, 0755);
	write_file(p, "[flush]\nworkers = 2\n");
	snprintf(d, sizeof(d), "%s/conf.d/10-a.conf", dir);
	write_file(d, "[flush]\nworkers = 3\n");
	snprintf(d, sizeof(d), "%s/conf.d/20-b.conf", dir);
	write_file(d, "[flush]\nworkers = 5\n");
	config_init(&c);
	CHECK(config_load(&c, p) == 0 && c.workers == 5, "drop-ins applied in order");
	write_file(d, "[flush]\nworkers = lots\n");
	CHECK(config_load(&c, p) < 0 && c.workers == 5, "bad drop-in fails the load, config unchanged");
	config_done(&c);
	config_init(&c);
	snprintf(p, sizeof(p), "%s/conf.d/missing.conf", dir);
	CHECK(config_load(&c, p) == 0 && c.workers == 4, "missing main file: defaults");
	config_done(&c);
	snprintf(d, sizeof(d), "rm -rf %s", dir);
	return system(d) == 0 ? tap_done() : 1;
}
