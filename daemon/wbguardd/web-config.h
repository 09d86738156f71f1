/* SPDX-License-Identifier: GPL-2.0-or-later */
/* [metrics] web_config_file: TLS and basic auth for the metrics listener,
 * in the format of the Prometheus exporters' --web.config.file
 * (exporter-toolkit), so that a central Prometheus scrapes wbguardd as it
 * scrapes node_exporter:
 *
 *   tls_server_config:
 *     cert_file: server.crt      # relative: to this file's folder
 *     key_file: server.key
 *     min_version: TLS12         # or TLS13; TLS12 when absent
 *   basic_auth_users:
 *     prometheus: $2y$10$...     # bcrypt (htpasswd -nbB)
 *
 * Read whole at start and reload; a file that does not load is refused,
 * naming its field, and the running one stays. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wbg_web_user {
	char *name, *hash;
};

#define WBG_WEB_AUTH_CACHE 8
/* the highest bcrypt cost a user's hash may name (exporter-toolkit's
 * examples use 10; htpasswd -B's default is 5) */
#define WBG_WEB_BCRYPT_COST_MAX 12

struct wbg_web_config {
	char *cert_pem, *key_pem; /* the files' contents, NUL-terminated */
	const char *priorities;   /* GnuTLS's, from min_version */
	struct wbg_web_user *users;
	size_t n_users;
	/* SHA-256 of credentials bcrypt accepted: a scrape every 15 s must
	 * not cost a bcrypt (120 ms at cost 10) on the event loop each time */
	uint8_t ok[WBG_WEB_AUTH_CACHE][32];
	unsigned n_ok;
};

/* Loads path into *w (which web_config_done() frees either way). On an
 * error: negative errno, and err holds "PATH: FIELD: why". */
int web_config_load(struct wbg_web_config *w, const char *path, char *err, size_t errlen);
void web_config_done(struct wbg_web_config *w);
/* Takes from's cached successes into to (a reload's new config): each is
 * a digest of user, hash and password, so one whose user or hash changed
 * never matches again, and the scraper's unchanged credentials are not
 * checked by bcrypt again after a reload. */
void web_config_keep_successes(struct wbg_web_config *to, const struct wbg_web_config *from);
/* Whether a and b serve the same certificate, key and versions. */
bool web_config_same_tls(const struct wbg_web_config *a, const struct wbg_web_config *b);
/* 1 when user and password are a success bcrypt accepted before (cached),
 * 0 when no users are configured; else -EAGAIN and the hash to try with
 * bcrypt (web_bcrypt_matches(), off the loop): user's own (*ret_known), or
 * for a name not configured the first user's, so that the time taken does
 * not tell which names exist. */
int web_config_check_user(struct wbg_web_config *w, const char *user, const char *password, const char **ret_hash,
			  bool *ret_known);
/* What the cache keeps of a success: SHA-256 of user, hash and password. */
void web_config_digest(const char *user, const char *hash, const char *password, uint8_t out[32]);
void web_config_remember(struct wbg_web_config *w, const uint8_t digest[32]);
/* bcrypt: whether password hashes to hash (thread-safe: crypt_rn). */
bool web_bcrypt_matches(const char *password, const char *hash);
