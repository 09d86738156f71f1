/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node-feature-discovery's feature file as nfd-worker reads it: the text
 * parsed here the way its local source does (source/local/local.go: lines
 * trimmed, "#" comments, "# +expiry-time=" RFC 3339, "name=value" split at
 * the first '=', dot files skipped, 64 KiB at most) and every label checked
 * against Kubernetes' rules as regular expressions of their own (not the
 * code's checks); written atomically in a temporary directory, not again
 * while nothing changed, and a missing directory an error that names the
 * file and leaves the writer working. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wbg-base.h"
#include "nfd-features.h"
#include "tap.h"
#include "textfile.h"

#define SEC 1000000ULL
#define NAMESPACE "feature.node.kubernetes.io"

/* Kubernetes' label rules (apimachinery's validation): a qualified name's
 * prefix is a DNS-1123 subdomain, its name and a value 63 characters of
 * [A-Za-z0-9._-], alphanumeric at both ends */
static bool matches(const char *re, const char *s)
{
	regex_t r;
	bool ok;

	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

static bool k8s_name_ok(const char *label)
{
	const char *slash = strchr(label, '/');
	char prefix[300];

	if (!slash || (size_t)(slash - label) > 253 || strlen(slash + 1) > 63)
		return false;
	snprintf(prefix, sizeof(prefix), "%.*s", (int)(slash - label), label);
	return matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", prefix) &&
	       matches("^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$", slash + 1);
}

static bool k8s_value_ok(const char *v)
{
	return strlen(v) <= 63 && matches("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", v);
}

struct parsed {
	int n;
	char name[8][320], value[8][80];
	time_t expiry;
	int bad_directives;
};

/* nfd-worker's parse of one feature file, at now */
static void nfd_parse(const char *text, time_t now, struct parsed *p)
{
	_cleanup_free_ char *copy = strdup(text);
	char *save = NULL;
	time_t expiry = now; /* local.go starts with ExpiryTime = now */

	memset(p, 0, sizeof(*p));
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *end = l + strlen(l), *eq;

		while (*l == ' ' || *l == '\t')
			l++;
		while (end > l && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = 0;
		if (!*l)
			continue;
		if (*l == '#') {
			struct tm tm = { 0 };
			const char *rest;

			if (strncmp(l, "# +", 3) != 0)
				continue;
			if (strncmp(l + 3, "expiry-time=", 12) == 0 &&
			    (rest = strptime(l + 15, "%Y-%m-%dT%H:%M:%SZ", &tm)) && !*rest)
				p->expiry = expiry = timegm(&tm);
			else if (strcmp(l + 3, "no-label") != 0 && strcmp(l + 3, "no-feature") != 0)
				p->bad_directives++;
			continue;
		}
		if (expiry < now || p->n >= 8)
			continue;
		eq = strchr(l, '=');
		snprintf(p->name[p->n], sizeof(p->name[0]), "%.*s", (int)(eq ? eq - l : end - l), l);
		snprintf(p->value[p->n], sizeof(p->value[0]), "%s", eq ? eq + 1 : "true");
		p->n++;
	}
}

static const char *value_of(const struct parsed *p, const char *name)
{
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->name[i], name) == 0)
			return p->value[i];
	return NULL;
}

static void check_rules(void)
{
	char name63[64], name64[65], label[400];

	memset(name63, 'a', 63), name63[63] = 0;
	memset(name64, 'a', 64), name64[64] = 0;
	CHECK(nfd_label_name_valid(NFD_LABEL_PREFIX "guarded") && nfd_label_name_valid(NFD_LABEL_PREFIX "dying-wb-fallback"),
	      "wbguard's two label names are valid");
	snprintf(label, sizeof(label), NAMESPACE "/%s", name63);
	CHECK(nfd_label_name_valid(label) && k8s_name_ok(label), "a name of 63 characters is valid");
	snprintf(label, sizeof(label), NAMESPACE "/%s", name64);
	CHECK(!nfd_label_name_valid(label) && !k8s_name_ok(label), "one of 64 is not");
	{
		static const char *const names[] = { "guarded", "/guarded", NAMESPACE "/", NAMESPACE "/-x", NAMESPACE "/x-",
						     NAMESPACE "/a b", NAMESPACE "/a/b", "Feature.example/x", "-a.io/x",
						     "a..io/x", "a.io./x", "a_b.io/x", NAMESPACE "/a.B_c-9" };
		int agree = 0;

		for (size_t i = 0; i < ELEMENTSOF(names); i++)
			agree += nfd_label_name_valid(names[i]) == k8s_name_ok(names[i]);
		CHECK(agree == (int)ELEMENTSOF(names) && nfd_label_name_valid(NAMESPACE "/a.B_c-9") &&
			      !nfd_label_name_valid("guarded"),
		      "names: the code agrees with Kubernetes' expressions on %d/%zu (no prefix, empty parts, "
		      "ends, two slashes, uppercase or '_' in the prefix refused)", agree, ELEMENTSOF(names));
	}
	{
		static const char *const values[] = { "", "true", "false", "active", "missing", "unknown", "a.b_c-d", "-a",
						      "a-", "a b", "a=b", "a/b", "ümlaut" };
		int agree = 0;

		for (size_t i = 0; i < ELEMENTSOF(values); i++)
			agree += nfd_label_value_valid(values[i]) == k8s_value_ok(values[i]);
		CHECK(agree == (int)ELEMENTSOF(values) && nfd_label_value_valid(name63) && !nfd_label_value_valid(name64) &&
			      !k8s_value_ok(name64),
		      "values: the code agrees with Kubernetes' expression on %d/%zu, 63 characters at most", agree,
		      ELEMENTSOF(values));
	}
}

static void check_format(void)
{
	static const char *const verdicts[] = { "active", "missing", "unknown" };
	const uint64_t expiry = 1796546280ULL * SEC; /* 2026-12-06T08:38:00Z */
	_cleanup_free_ char *text = NULL;
	int good = 0;

	CHECK(nfd_features_format(&(struct wbg_nfd_labels){ "missing", true }, expiry, &text) == 0 &&
		      strcmp(text, "# node-feature-discovery's local source: this node's wbguard labels, written by\n"
				   "# wbguardd ([metrics] nfd_features_file); renewed while it runs, then expires.\n"
				   "# +expiry-time=2026-12-06T08:38:00Z\n"
				   "feature.node.kubernetes.io/wbguard-dying-wb-fallback=missing\n"
				   "feature.node.kubernetes.io/wbguard-guarded=true\n") == 0,
	      "the file, exactly: two comments, the expiry directive, the two labels");
	for (size_t v = 0; v < ELEMENTSOF(verdicts); v++)
		for (int g = 0; g < 2; g++) {
			_cleanup_free_ char *t = NULL;
			struct parsed p, later;
			bool ok;

			if (nfd_features_format(&(struct wbg_nfd_labels){ verdicts[v], g }, expiry, &t) < 0)
				continue;
			nfd_parse(t, (time_t)(expiry / SEC) - 60, &p);
			nfd_parse(t, (time_t)(expiry / SEC) + 1, &later);
			ok = p.n == 2 && p.bad_directives == 0 && p.expiry == (time_t)(expiry / SEC) && later.n == 0 &&
			     strlen(t) < 65536 && value_of(&p, NAMESPACE "/wbguard-dying-wb-fallback") &&
			     strcmp(value_of(&p, NAMESPACE "/wbguard-dying-wb-fallback"), verdicts[v]) == 0 &&
			     value_of(&p, NAMESPACE "/wbguard-guarded") &&
			     strcmp(value_of(&p, NAMESPACE "/wbguard-guarded"), g ? "true" : "false") == 0;
			for (int i = 0; i < p.n; i++)
				ok = ok && k8s_name_ok(p.name[i]) && k8s_value_ok(p.value[i]) &&
				     strncmp(p.name[i], NAMESPACE "/", strlen(NAMESPACE "/")) == 0;
			good += ok;
		}
	CHECK(good == 6,
	      "as nfd-worker parses it, every verdict and guarded: two labels in feature.node.kubernetes.io "
	      "(never denied), Kubernetes-valid, no unknown directive, dropped past the expiry (%d/6)", good);
	CHECK(nfd_features_format(&(struct wbg_nfd_labels){ "not valid", true }, expiry, &text) == -EINVAL &&
		      nfd_features_format(&(struct wbg_nfd_labels){ "", true }, expiry, &text) == -EINVAL,
	      "a value outside the rules is refused, not written");
}

static void check_update(void)
{
	struct wbg_nfd_features s = { 0 };
	const uint64_t t0 = 1796546280ULL * SEC, half = NFD_FEATURES_EXPIRY_USEC / 2;
	char *text = NULL;
	struct parsed p;

	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", true }, t0, &text) == 1 && text,
	      "the first update writes");
	nfd_parse(text, (time_t)(t0 / SEC), &p);
	CHECK(p.expiry == (time_t)((t0 + NFD_FEATURES_EXPIRY_USEC) / SEC), "expiring a whole span ahead");
	free(text);
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", true }, t0 + 10 * SEC, &text) == 0 && !text &&
		      nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", true }, t0 + half - SEC, &text) == 0,
	      "unchanged labels are not written again (10 s later, nor just before half the span)");
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", false }, t0 + 20 * SEC, &text) == 1 && text &&
		      strstr(text, "wbguard-guarded=false\n"),
	      "guarded changing is written at once");
	free(text);
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "active", false }, t0 + 30 * SEC, &text) == 1 &&
		      strstr(text, "wbguard-dying-wb-fallback=active\n"),
	      "the verdict changing is written at once");
	free(text);
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "active", false }, t0 + 30 * SEC + half + SEC, &text) == 1,
	      "unchanged but with less than half the span left: renewed");
	free(text);
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "active", false }, t0 - 3600 * SEC, &text) == 1,
	      "the clock stepped back an hour: renewed (else a dead wbguardd's labels would outlive it by that)");
	free(text);
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "bad value", false }, t0, &text) == -EINVAL &&
		      strcmp(s.dying_wb_fallback, "active") == 0,
	      "a bad value is refused and the state kept");
}

static int count_entries(const char *dir, char *names, size_t size)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	*names = 0;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			snprintf(names + strlen(names), size - strlen(names), " %s", e->d_name);
			n++;
		}
	return n;
}

static char *slurp(const char *path)
{
	char *text = NULL;

	return read_small_file_at(AT_FDCWD, path, 65536, &text) < 0 ? NULL : text;
}

static void check_write(const char *dir)
{
	char path[256], tmp[300], victim[300], names[512];
	struct wbg_nfd_features s = { 0 };
	struct stat a, b;
	char *text = NULL;
	uint64_t now = 1796546280ULL * SEC;

	snprintf(path, sizeof(path), "%s/wbguard", dir);
	snprintf(tmp, sizeof(tmp), "%s/.wbguard.tmp", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	(void)nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", true }, now, &text);
	CHECK(nfd_features_write(path, text) == 0, "written");
	{
		_cleanup_free_ char *back = slurp(path);

		CHECK(back && strcmp(back, text) == 0 && stat(path, &a) == 0 && (a.st_mode & 07777) == 0644,
		      "the file holds the text, mode 0644");
	}
	CHECK(count_entries(dir, names, sizeof(names)) == 1, "nothing else in the directory (the dot file renamed):%s",
	      names);
	free(text);
	text = NULL;

	/* nothing changed: nothing handed over, the file untouched */
	CHECK(nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", true }, now + 60 * SEC, &text) == 0 && !text &&
		      stat(path, &b) == 0 && b.st_ino == a.st_ino && b.st_mtim.tv_nsec == a.st_mtim.tv_nsec,
	      "unchanged: not rewritten (same inode and time)");

	/* a crash's temporary, and a symlink put in its place, are replaced */
	{
		int fd = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		_cleanup_free_ char *v = NULL;

		if (fd >= 0)
			close(fd);
		(void)!symlink(victim, tmp);
		(void)nfd_features_update(&s, &(struct wbg_nfd_labels){ "missing", false }, now + 120 * SEC, &text);
		CHECK(nfd_features_write(path, text) == 0 && stat(path, &b) == 0 && b.st_ino != a.st_ino,
		      "a change replaces the file by a rename (a new inode), never in place");
		v = slurp(victim);
		CHECK(v && !*v && access(tmp, F_OK) != 0, "a symlink at the temporary's name is not written through");
		free(text);
		text = NULL;
		unlink(victim);
	}
	CHECK(nfd_features_write("/x/.wbguard", "x\n") == -EINVAL && nfd_features_write("/x/", "x\n") == -EINVAL,
	      "a dot file (nfd-worker skips it) or a directory is not a feature file");
}

/* The directory missing (nfd-worker not on the node, a hostPath not
 * mounted): the error names the file, and the writer writes once it is
 * there. */
static void check_missing(const char *dir)
{
	char sub[256], path[300], names[512];
	_cleanup_free_ char *log = NULL;
	struct wbg_textfile *t;
	char logpath[300];
	int saved, fd;

	snprintf(sub, sizeof(sub), "%s/features.d", dir);
	snprintf(path, sizeof(path), "%s/wbguard", sub);
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	CHECK(nfd_features_write(path, "x\n") == -ENOENT, "a missing directory: -ENOENT");

	CHECK(textfile_new_named("node-feature-discovery feature file", nfd_features_write, &t) == 0, "a writer thread");
	fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	saved = dup(STDERR_FILENO);
	if (fd < 0 || saved < 0 || dup2(fd, STDERR_FILENO) < 0)
		return;
	log_set_max_level(LOG_WARNING);
	textfile_submit(t, path, strdup("a\n"));
	for (int i = 0; i < 500 && textfile_errors(t) == 0; i++)
		usleep(10 * 1000);
	log_set_max_level(-1);
	(void)dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	log = slurp(logpath);
	if (log)
		log[strcspn(log, "\n")] = 0;
	CHECK(textfile_errors(t) == 1 && log && strstr(log, "Cannot write the node-feature-discovery feature file") &&
		      strstr(log, path) && strstr(log, strerror(ENOENT)),
	      "counted, and logged naming the file and the cause: %s", log ? log : "(nothing)");
	unlink(logpath);
	(void)mkdir(sub, 0755);
	textfile_submit(t, path, strdup("b\n"));
	textfile_free(t, 5 * SEC);
	{
		_cleanup_free_ char *back = slurp(path);

		CHECK(back && strcmp(back, "b\n") == 0 && count_entries(sub, names, sizeof(names)) == 1,
		      "the writer carries on: once the directory is there the next text is written");
	}
}

int main(void)
{
	char dir[] = "/tmp/wbg-nfd-XXXXXX", cmd[300];

	log_set_max_level(-1);
	if (!mkdtemp(dir))
		return 1;
	check_rules();
	check_format();
	check_update();
	check_write(dir);
	check_missing(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
