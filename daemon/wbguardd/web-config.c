/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <yaml.h>

#include "wbg-base.h"
#include "web-config.h"

/* exporter-toolkit's default floor is TLS 1.2, as here */
#define PRIO_TLS12 "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define PRIO_TLS13 "NORMAL:-VERS-ALL:+VERS-TLS1.3"

struct loader {
	const char *path;
	yaml_document_t doc;
	char *err;
	size_t errlen;
};

/* "PATH: FIELD: why", the error every caller logs or hands back */
__attribute__((format(printf, 4, 5))) static int fail(struct loader *l, int r, const char *field, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = snprintf(l->err, l->errlen, "%s: %s: ", l->path, field);
	if (n >= 0 && (size_t)n < l->errlen)
		vsnprintf(l->err + n, l->errlen - n, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start is just above */
	va_end(ap);
	return r;
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A file the web config names: relative to the web config's folder, as
 * exporter-toolkit reads it. */
static int read_named(struct loader *l, const char *field, const char *name, char **ret)
{
	const char *slash = strrchr(l->path, '/');
	_cleanup_free_ char *full = NULL;
	int r;

	if (name[0] != '/' && slash && asprintf(&full, "%.*s/%s", (int)(slash - l->path), l->path, name) < 0)
		return fail(l, -ENOMEM, field, "out of memory");
	r = read_small_file_at(AT_FDCWD, full ?: name, 1 << 20, ret);
	if (r < 0)
		return fail(l, r, field, "cannot read %s: %s", full ?: name, strerror(-r));
	return 0;
}

/* The certificate and key as GnuTLS (libmicrohttpd's) will take them: a
 * pair that does not match is refused here, not at the first handshake. */
static int check_pair(struct loader *l, struct wbg_web_config *w)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = { (unsigned char *)w->cert_pem, strlen(w->cert_pem) };
	gnutls_datum_t key = { (unsigned char *)w->key_pem, strlen(w->key_pem) };
	int g;

	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return fail(l, -ENOMEM, "tls_server_config", "out of memory");
	g = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_certificate_free_credentials(cred);
	if (g < 0)
		return fail(l, -EINVAL, "tls_server_config.key_file", "does not load with cert_file (PEM): %s",
			    gnutls_strerror(g));
	return 0;
}

static int load_tls(struct loader *l, struct wbg_web_config *w, yaml_node_t *map)
{
	const char *cert = NULL, *key = NULL;
	int r;

	if (map->type != YAML_MAPPING_NODE)
		return fail(l, -EINVAL, "tls_server_config", "not a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&l->doc, p->key));
		const char *v = scalar(yaml_document_get_node(&l->doc, p->value));
		char field[96];

		snprintf(field, sizeof(field), "tls_server_config.%s", k ?: "?");
		if (!k || !v)
			return fail(l, -EINVAL, field, "not a plain key and value");
		if (strcmp(k, "cert_file") == 0)
			cert = v;
		else if (strcmp(k, "key_file") == 0)
			key = v;
		else if (strcmp(k, "min_version") == 0) {
			if (strcmp(v, "TLS12") != 0 && strcmp(v, "TLS13") != 0)
				return fail(l, -EINVAL, field, "'%s': TLS12 or TLS13", v);
			w->priorities = strcmp(v, "TLS13") == 0 ? PRIO_TLS13 : PRIO_TLS12;
		} else if (strcmp(k, "client_auth_type") == 0) {
			/* refused rather than ignored: a setting that
			 * restricts who gets in must not be dropped unseen */
			if (v[0] && strcmp(v, "NoClientCert") != 0)
				return fail(l, -EOPNOTSUPP, field, "'%s': only NoClientCert (client certificates are "
					    "not supported; basic_auth_users are)", v);
		} else if (strcmp(k, "client_ca_file") == 0) {
			if (v[0])
				return fail(l, -EOPNOTSUPP, field, "client certificates are not supported");
		} else
			return fail(l, -EOPNOTSUPP, field, "not supported by wbguardd");
	}
	/* basic auth over plain HTTP would send the password in the clear */
	if (!cert || !cert[0])
		return fail(l, -EINVAL, "tls_server_config.cert_file", "required");
	if (!key || !key[0])
		return fail(l, -EINVAL, "tls_server_config.key_file", "required");
	r = read_named(l, "tls_server_config.cert_file", cert, &w->cert_pem);
	if (r >= 0)
		r = read_named(l, "tls_server_config.key_file", key, &w->key_pem);
	return r < 0 ? r : check_pair(l, w);
}

/* exporter-toolkit takes bcrypt alone; so does this. Its form only
 * ("$2y$NN$" and 53 characters of bcrypt's base64): trying the hash would
 * cost its rounds on the loop at every load and reload. */
static bool is_bcrypt(const char *hash)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

	return strlen(hash) == 60 &&
	       (strncmp(hash, "$2a$", 4) == 0 || strncmp(hash, "$2b$", 4) == 0 || strncmp(hash, "$2y$", 4) == 0) &&
	       hash[4] >= '0' && hash[4] <= '3' && hash[5] >= '0' && hash[5] <= '9' && hash[6] == '$' &&
	       strspn(hash + 7, b64) == 53;
}

static int load_users(struct loader *l, struct wbg_web_config *w, yaml_node_t *map)
{
	size_t n;

	if (map->type == YAML_SCALAR_NODE && !map->data.scalar.length)
		return 0; /* "basic_auth_users:" with none */
	if (map->type != YAML_MAPPING_NODE)
		return fail(l, -EINVAL, "basic_auth_users", "not a mapping of user: bcrypt hash");
	n = map->data.mapping.pairs.top - map->data.mapping.pairs.start;
	w->users = calloc(n ?: 1, sizeof(*w->users));
	if (!w->users)
		return fail(l, -ENOMEM, "basic_auth_users", "out of memory");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&l->doc, p->key));
		const char *v = scalar(yaml_document_get_node(&l->doc, p->value));
		struct wbg_web_user *u = &w->users[w->n_users];
		char field[96];

		snprintf(field, sizeof(field), "basic_auth_users.%s", k ?: "?");
		if (!k || !k[0] || !v)
			return fail(l, -EINVAL, field, "not a user name and its hash");
		if (strchr(k, ':'))
			return fail(l, -EINVAL, field, "a user name cannot hold ':' (basic auth splits there)");
		/* "$2y$NN$": each check of a stranger's guess costs 2^NN
		 * rounds (cost 12: about 0.5 s of a core, cost 14: 2 s);
		 * looked at before the hash is tried (at cost 31, for days) */
		if (strlen(v) > 7 && atoi(v + 4) > WBG_WEB_BCRYPT_COST_MAX)
			return fail(l, -EINVAL, field,
				    "bcrypt cost %d is above %d: every guess a stranger sends would cost seconds of "
				    "CPU (hash the password again: htpasswd -nbB -C 10)",
				    atoi(v + 4), WBG_WEB_BCRYPT_COST_MAX);
		if (!is_bcrypt(v))
			return fail(l, -EINVAL, field, "not a bcrypt hash ($2y$..., as htpasswd -nbB prints)");
		u->name = strdup(k);
		u->hash = strdup(v);
		w->n_users++;
		if (!u->name || !u->hash)
			return fail(l, -ENOMEM, field, "out of memory");
	}
	return 0;
}

static int load_doc(struct loader *l, struct wbg_web_config *w)
{
	yaml_node_t *root = yaml_document_get_root_node(&l->doc);
	bool tls = false;
	int r = 0;

	if (!root || (root->type == YAML_SCALAR_NODE && !root->data.scalar.length))
		return fail(l, -EINVAL, "tls_server_config", "required (the file is empty)");
	if (root->type != YAML_MAPPING_NODE)
		return fail(l, -EINVAL, "(top)", "not a mapping");
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; r >= 0 && p < root->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&l->doc, p->key));
		yaml_node_t *v = yaml_document_get_node(&l->doc, p->value);

		if (k && strcmp(k, "tls_server_config") == 0) {
			tls = true;
			r = load_tls(l, w, v);
		} else if (k && strcmp(k, "basic_auth_users") == 0)
			r = load_users(l, w, v);
		else
			r = fail(l, -EOPNOTSUPP, k ?: "?", "not supported by wbguardd (tls_server_config, "
				 "basic_auth_users are)");
	}
	if (r >= 0 && !tls)
		r = fail(l, -EINVAL, "tls_server_config", "required (basic auth without TLS would send the "
			 "password in the clear)");
	return r;
}

int web_config_load(struct wbg_web_config *w, const char *path, char *err, size_t errlen)
{
	struct loader l = { .path = path, .err = err, .errlen = errlen };
	_cleanup_free_ char *text = NULL;
	yaml_parser_t parser;
	int r;

	*w = (struct wbg_web_config){ .priorities = PRIO_TLS12 };
	r = read_small_file_at(AT_FDCWD, path, 1 << 20, &text);
	if (r < 0)
		return fail(&l, r, "(file)", "cannot read: %s", strerror(-r));
	if (!yaml_parser_initialize(&parser))
		return fail(&l, -ENOMEM, "(file)", "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&parser, &l.doc)) {
		r = fail(&l, -EINVAL, "(YAML)", "line %zu: %s", parser.problem_mark.line + 1,
			 parser.problem ?: "cannot parse");
		yaml_parser_delete(&parser);
		return r;
	}
	yaml_parser_delete(&parser);
	r = load_doc(&l, w);
	yaml_document_delete(&l.doc);
	return r;
}

void web_config_done(struct wbg_web_config *w)
{
	for (size_t i = 0; i < w->n_users; i++) {
		free(w->users[i].name);
		free(w->users[i].hash);
	}
	free(w->users);
	free(w->cert_pem);
	/* the private key leaves no copy in freed memory */
	if (w->key_pem)
		explicit_bzero(w->key_pem, strlen(w->key_pem));
	free(w->key_pem);
	explicit_bzero(w->ok, sizeof(w->ok));
	*w = (struct wbg_web_config){ 0 };
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void web_config_keep_successes(struct wbg_web_config *to, const struct wbg_web_config *from)
{
	memcpy(to->ok, from->ok, sizeof(to->ok));
	to->n_ok = from->n_ok;
}

bool web_config_same_tls(const struct wbg_web_config *a, const struct wbg_web_config *b)
{
	return same_str(a->cert_pem, b->cert_pem) && same_str(a->key_pem, b->key_pem) &&
	       same_str(a->priorities, b->priorities);
}

/* Whether a and b are equal, in a time that does not say where they differ */
static bool equal_const_time(const char *a, const char *b)
{
	size_t n = strlen(a);
	unsigned char d = n != strlen(b);

	for (size_t i = 0; i < n && !d; i++) /* lengths equal: b is as long */
		d |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return !d;
}

void web_config_digest(const char *user, const char *hash, const char *password, uint8_t out[32])
{
	_cleanup_free_ char *s = NULL;
	int n = asprintf(&s, "%s%c%s%c%s", user, 0, hash, 0, password);

	memset(out, 0, 32);
	if (n > 0)
		(void)gnutls_hash_fast(GNUTLS_DIG_SHA256, s, n, out);
	if (s)
		explicit_bzero(s, n);
}

bool web_bcrypt_matches(const char *password, const char *hash)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *h;
	bool ok;

	if (!cd)
		return false;
	h = crypt_rn(password, hash, cd, sizeof(*cd));
	ok = h && equal_const_time(h, hash);
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return ok;
}

void web_config_remember(struct wbg_web_config *w, const uint8_t digest[32])
{
	memcpy(w->ok[w->n_ok++ % WBG_WEB_AUTH_CACHE], digest, 32);
}

int web_config_check_user(struct wbg_web_config *w, const char *user, const char *password, const char **ret_hash,
			  bool *ret_known)
{
	const struct wbg_web_user *u = NULL;
	uint8_t d[32];

	for (size_t i = 0; i < w->n_users && !u; i++)
		if (strcmp(w->users[i].name, user) == 0)
			u = &w->users[i];
	if (u) {
		web_config_digest(u->name, u->hash, password, d);
		for (unsigned i = 0; i < w->n_ok && i < WBG_WEB_AUTH_CACHE; i++)
			if (memcmp(w->ok[i], d, sizeof(d)) == 0)
				return 1;
	}
	if (!w->n_users)
		return 0;
	/* an unknown user costs a bcrypt as well: the time taken does not
	 * tell which names exist */
	*ret_hash = u ? u->hash : w->users[0].hash;
	*ret_known = u;
	return -EAGAIN;
}
