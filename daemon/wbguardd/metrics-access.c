/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <pwd.h>
#include <string.h>

#include "wbg-base.h"
#include "wbg-metrics.h"
#include "metrics-access.h"

void metrics_access_set_users(struct wbg_metrics_access *a, const char *users)
{
	a->n_allow = 0;
	a->restrict_users = false;
	for (const char *s = users; *s;) {
		size_t n = strcspn(s, " \t");
		char word[64];

		if (n && n < sizeof(word)) {
			struct passwd *pw;
			unsigned u;

			snprintf(word, sizeof(word), "%.*s", (int)n, s);
			a->restrict_users = true;
			if (parse_uint(word, 0, UINT32_MAX - 1, &u) == 0) {
				if (a->n_allow < ELEMENTSOF(a->allow))
					a->allow[a->n_allow++] = (uid_t)u;
			} else if ((pw = getpwnam(word))) {
				if (a->n_allow < ELEMENTSOF(a->allow))
					a->allow[a->n_allow++] = pw->pw_uid;
			} else
				log_info("[metrics] allow_users: no user %s here; skipped", word);
		}
		s += n;
		s += strspn(s, " \t");
	}
}

/* Whether the peer's socket belongs to an allowed user. */
static bool allowed(const struct wbg_metrics_access *a, int peer_r, uid_t uid)
{
	if (!a->restrict_users)
		return true;
	if (peer_r < 0) {
		log_debug_errno(peer_r, "/metrics: cannot tell whose the peer's socket is (remote?): refused");
		return false;
	}
	for (unsigned i = 0; i < a->n_allow; i++)
		if (a->allow[i] == uid)
			return true;
	log_debug("/metrics: uid %u is not in [metrics] allow_users: refused", (unsigned)uid);
	return false;
}

unsigned metrics_access_decide(const struct wbg_metrics_access *a, struct wbg_web_config *web, int peer_r,
			       uid_t peer_uid, const char *user, const char *pass, const char **ret_hash,
			       bool *ret_known)
{
	int r;

	if (!web || !web->n_users)
		return allowed(a, peer_r, peer_uid) ? 200 : 403;
	if (!user)
		return a->restrict_users && allowed(a, peer_r, peer_uid) ? 200 : 401;
	r = web_config_check_user(web, user, pass ?: "", ret_hash, ret_known);
	return r > 0 ? 200 : r == 0 ? 401 : 0;
}

void metrics_access_refused(struct wbg_metrics_access *a, unsigned status)
{
	atomic_fetch_add(status == 403 ? &a->forbidden : &a->unauthorized, 1);
}

void metrics_access_metrics(FILE *f, const struct wbg_metrics_access *a)
{
	metric_counter(f, "wbguard_http_forbidden_total",
		       "/metrics requests refused: the peer's socket is not owned by a user in [metrics] allow_users "
		       "(or is remote).",
		       atomic_load(&a->forbidden));
	metric_counter(f, "wbguard_http_unauthorized_total",
		       "/metrics requests without valid credentials of [metrics] web_config_file's basic_auth_users "
		       "(401), or past its few bcrypt checks a second per peer (429).",
		       atomic_load(&a->unauthorized));
}
