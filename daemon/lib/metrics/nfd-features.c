/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wbg-base.h"
#include "nfd-features.h"

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* NAME of a label, and a value: [A-Za-z0-9._-], alphanumeric at both ends */
static bool name_part_valid(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* a DNS-1123 subdomain: lowercase labels of [a-z0-9-], alphanumeric at both
 * ends, joined by dots */
static bool prefix_valid(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? s[i] : '.';

		if (c == '.') {
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return false;
			start = i + 1;
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

bool nfd_label_name_valid(const char *name)
{
	const char *slash = name ? strchr(name, '/') : NULL;

	if (!slash || strchr(slash + 1, '/'))
		return false;
	return prefix_valid(name, (size_t)(slash - name)) && name_part_valid(slash + 1, strlen(slash + 1));
}

bool nfd_label_value_valid(const char *value)
{
	return value && (!*value || name_part_valid(value, strlen(value)));
}

int nfd_features_format(const struct wbg_nfd_labels *l, uint64_t expiry_usec, char **ret)
{
	time_t t = (time_t)(expiry_usec / 1000000);
	char expiry[32], *text;
	struct tm tm;

	if (!nfd_label_value_valid(l->dying_wb_fallback) || !*l->dying_wb_fallback)
		return -EINVAL;
	if (!gmtime_r(&t, &tm) || strftime(expiry, sizeof(expiry), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return -ERANGE;
	/* Prose comments never start with "# +": nfd-worker takes those for
	 * directives and logs an unknown one as an error. */
	if (asprintf(&text,
		     "# node-feature-discovery's local source: this node's wbguard labels, written by\n"
		     "# wbguardd ([metrics] nfd_features_file); renewed while it runs, then expires.\n"
		     "# +expiry-time=%s\n"
		     NFD_LABEL_PREFIX "dying-wb-fallback=%s\n"
		     NFD_LABEL_PREFIX "guarded=%s\n",
		     expiry, l->dying_wb_fallback, l->guarded ? "true" : "false") < 0)
		return -ENOMEM;
	*ret = text;
	return 0;
}

int nfd_features_update(struct wbg_nfd_features *s, const struct wbg_nfd_labels *l, uint64_t now_usec,
			char **ret_text)
{
	uint64_t expiry = now_usec + NFD_FEATURES_EXPIRY_USEC;
	bool same, renew;
	char *text;
	int r;

	if (!l->dying_wb_fallback || strlen(l->dying_wb_fallback) >= sizeof(s->dying_wb_fallback))
		return -EINVAL;
	same = s->submitted && s->guarded == l->guarded && strcmp(s->dying_wb_fallback, l->dying_wb_fallback) == 0;
	renew = s->expiry_usec < now_usec + NFD_FEATURES_EXPIRY_USEC / 2 || s->expiry_usec > expiry;
	if (same && !renew) {
		*ret_text = NULL;
		return 0;
	}
	r = nfd_features_format(l, expiry, &text);
	if (r < 0)
		return r;
	s->submitted = true;
	s->guarded = l->guarded;
	snprintf(s->dying_wb_fallback, sizeof(s->dying_wb_fallback), "%s", l->dying_wb_fallback);
	s->expiry_usec = expiry;
	*ret_text = text;
	return 1;
}

int nfd_features_write(const char *path, const char *text)
{
	const char *slash = strrchr(path, '/');
	char tmp[PATH_MAX];

	if (!slash || !slash[1] || slash[1] == '.')
		return -EINVAL;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp", (int)(slash + 1 - path), path, slash + 1) >= sizeof(tmp))
		return -ENAMETOOLONG;
	return write_file_atomic_via(path, tmp, text, true, 0644);
}
