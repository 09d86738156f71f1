/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configuration's keys as one table (like systemd's ConfigTableItem):
 * the parser, the unknown-key warning, the shipped-defaults test, the
 * manual's check, the generated reference (docs/configuration.md) and the
 * reload's "applies at restart" notice all read it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct wbg_config;

enum wbg_conf_type {
	WBG_CONF_PATH,           /* absolute path into a char[] */
	WBG_CONF_PATH_OR_EMPTY,  /* absolute path or "" */
	WBG_CONF_CGROUP_PATH,    /* relative to cgroup_root ('/' dropped) */
	WBG_CONF_CGROUP_PATHS,   /* [daemon] roots */
	WBG_CONF_PATHS,          /* [expiry] runtime_state_dirs */
	WBG_CONF_UINT,
	WBG_CONF_BOOL,
	WBG_CONF_SECONDS,        /* a duration, bare numbers in seconds; microseconds in a uint64_t */
	WBG_CONF_CENTISECONDS,   /* a duration, bare numbers in centiseconds (the sysctl's unit) */
	WBG_CONF_SIZE,           /* bytes in a uint64_t, K/M/G suffixes */
	WBG_CONF_WORD,           /* one of words[], its index in an int-sized enum */
	WBG_CONF_FSTYPES,        /* filesystem type globs */
	WBG_CONF_LISTEN,         /* ADDRESS:PORT, [V6]:PORT, or off */
	WBG_CONF_TEXTFILE,       /* an absolute path ending in .prom, or "" */
	WBG_CONF_FEATURE_FILE,   /* an absolute path to a file whose name is no dot file, or "" */
	WBG_CONF_PASSES,         /* passes_FSTYPE: syncfs passes per filesystem type */
	WBG_CONF_USERS,          /* user names or numeric uids, separated by spaces */
	WBG_CONF_NAME,           /* letters, digits, '-', '_' and '.', into a char[] */
};

/* Flags. */
#define WBG_CONF_RESTART (1u << 0) /* a reload keeps the running value */
#define WBG_CONF_EMPTY_OFF (1u << 1) /* "" (or "off", "0" for durations) sets 0 */

struct wbg_conf_key {
	const char *section;
	const char *key; /* "passes_FSTYPE": a family of keys */
	size_t offset;   /* into struct wbg_config */
	size_t size;     /* of a char[] field */
	double min, max; /* numbers and durations, in the bare unit */
	const char *const *words; /* WBG_CONF_WORD, NULL-terminated */
	const char *doc; /* one sentence for the reference */
	/* The default, as the configuration file would write it (config_init()
	 * parses it as it parses a file); NULL: empty. passes_FSTYPE: "TYPE=N"
	 * words, "default=N" for the others. */
	const char *def;
	enum wbg_conf_type type;
	unsigned flags;
};

/* The table, ELEMENTSOF-sized through ret_n. */
const struct wbg_conf_key *conf_keys(size_t *ret_n);
/* The entry for [section] key (passes_* included), or NULL. */
const struct wbg_conf_key *conf_key_find(const char *section, const char *key);
/* Parses v into c's field; -EINVAL, -ERANGE or -ENOMEM. */
int conf_key_set(const struct wbg_conf_key *k, struct wbg_config *c, const char *key, const char *v);
/* What a good value looks like, for errors and the reference. */
const char *conf_key_expect(const struct wbg_conf_key *k, char *buf, size_t size);
/* c's value of the key as the configuration file would write it. For
 * passes_FSTYPE, every configured type and passes_default, separated by
 * spaces as "TYPE=N". */
const char *conf_key_format(const struct wbg_conf_key *k, const struct wbg_config *c, char *buf, size_t size);
/* The effective configuration c in the file's syntax (wbguardd
 * --print-config): every key by section, then the [policy] sections. */
void conf_print(FILE *f, const struct wbg_config *c);
/* Writes the Markdown reference (docs/configuration.md) to f. */
void conf_keys_reference(FILE *f);
