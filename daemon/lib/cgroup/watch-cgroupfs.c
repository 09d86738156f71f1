/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "cgroup-util.h"
#include "wbg-base.h"
#include "wbg-metrics.h"
#include "watch-cgroupfs.h"

#define DIR_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
#define EVENTS_MASK (IN_MODIFY)

int watch_init(struct wbg_watch *w, const char *root, char *const *roots, unsigned n_roots, struct wbg_registry *reg,
	       const struct wbg_watch_ops *ops, void *userdata)
{
	*w = (struct wbg_watch){ .reg = reg, .ops = ops, .userdata = userdata, .fd = -EBADF };
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0)
		return log_error_errno(errno, "inotify_init1");
	w->root = strdup(root);
	if (!w->root)
		return log_oom();
	if (n_roots) {
		w->roots = calloc(n_roots, sizeof(char *));
		if (!w->roots)
			return log_oom();
		for (unsigned i = 0; i < n_roots; i++) {
			w->roots[i] = strdup(roots[i]);
			if (!w->roots[i])
				return log_oom();
			w->n_roots++;
		}
	}
	return 0;
}

void watch_done(struct wbg_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	for (unsigned i = 0; i < w->n_roots; i++)
		free(w->roots[i]);
	free(w->roots);
	free(w->root);
	free(w->exclude);
	*w = (struct wbg_watch){ .fd = -EBADF };
}

bool watch_in_scope(const struct wbg_watch *w, const char *path, bool *ret_ancestor_only)
{
	size_t pl = strlen(path);

	*ret_ancestor_only = false;
	if (w->exclude) {
		size_t el = strlen(w->exclude);

		if (strncmp(path, w->exclude, el) == 0 && (path[el] == 0 || path[el] == '/'))
			return false;
	}
	if (w->n_roots == 0)
		return true;
	for (unsigned i = 0; i < w->n_roots; i++) {
		const char *r = w->roots[i];
		size_t rl = strlen(r);

		if (rl == 0 || (pl >= rl && strncmp(path, r, rl) == 0 && (path[rl] == 0 || path[rl] == '/')))
			return true;
	}
	for (unsigned i = 0; i < w->n_roots; i++) {
		const char *r = w->roots[i];

		if (pl == 0 || (strlen(r) > pl && strncmp(r, path, pl) == 0 && r[pl] == '/')) {
			*ret_ancestor_only = true;
			return true;
		}
	}
	return false;
}

/* false when it did not fit (callers check path_fits() first) */
static bool join(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s%s%s", a, *a && *b ? "/" : "", b);

	return n >= 0 && (size_t)n < size;
}

static int add_watches(struct wbg_watch *w, struct wbg_cgroup *c)
{
	char p[PATH_MAX];
	int wd, r;

	if (!join(p, sizeof(p), w->root, c->path))
		return -ENAMETOOLONG;
	wd = inotify_add_watch(w->fd, p, DIR_MASK);
	if (wd < 0)
		return -errno;
	r = registry_set_wd(w->reg, c, false, wd);
	if (r < 0)
		return r;
	if (!*c->path || !c->in_scope)
		return 0; /* the root has no cgroup.events; ancestors need none */
	strncat(p, "/cgroup.events", sizeof(p) - strlen(p) - 1);
	wd = inotify_add_watch(w->fd, p, EVENTS_MASK);
	if (wd < 0) {
		struct stat st;

		r = -errno;
		if (r == -ENOENT && join(p, sizeof(p), w->root, c->path) && stat(p, &st) == 0)
			return 0; /* a directory that is no cgroup: nothing to watch in it */
		return r;
	}
	return registry_set_wd(w->reg, c, true, wd);
}

static bool read_populated(const struct wbg_watch *w, const struct wbg_cgroup *c)
{
	uint64_t v = 0;

	return *c->path && cg_read_keyed_u64(w->root, c->path, "cgroup.events", "populated", &v) == 0 && v;
}

/* The tracked root of path's tenant, when path is below it. */
static struct wbg_cgroup *tenant_root(const struct wbg_watch *w, const char *path)
{
	size_t len = cgroup_tenant_len(path);
	char root[PATH_MAX];

	if (len >= strlen(path) || len >= sizeof(root))
		return NULL;
	snprintf(root, sizeof(root), "%.*s", (int)len, path);
	return registry_find_path(w->reg, root);
}

uint64_t watch_tenant_id(const struct wbg_watch *w, const struct wbg_cgroup *c)
{
	const struct wbg_cgroup *root = tenant_root(w, c->path);

	/* a tenant's root is its own tenant; above any tenant (the root, a
	 * slice): none */
	if (root)
		return root->id;
	return cgroup_tenant_len(c->path) == strlen(c->path) ? c->id : 0;
}

/* Whether one more cgroup may be tracked: the node's table and its
 * tenant's share of it. O(its path): one lookup of the tenant's root. */
static bool within_caps(struct wbg_watch *w, const char *path, struct wbg_cgroup **ret_root, bool *ret_pooled)
{
	static const char *const why[_WBG_SHARE_REFUSAL_MAX] = {
		[WBG_SHARE_FULL] = "[daemon] max_cgroups",
		[WBG_SHARE_TENANT] = "[daemon] max_cgroups_per_tenant",
		[WBG_SHARE_POOL] = "its tenant's floor, and the pool of shares above floors",
	};
	struct wbg_cgroup *root = tenant_root(w, path);
	enum wbg_share_refusal r = share_take(&w->share, root, root ? root->tenant_members : 0, ret_pooled);

	*ret_root = root;
	if (r != WBG_SHARE_TAKEN && !w->caps_logged) {
		log_warning("Not tracking %.128s: %s reached (removals there are found by the stall they cause)", path,
			    why[r]);
		w->caps_logged = true;
	}
	return r == WBG_SHARE_TAKEN;
}

void watch_set_caps(struct wbg_watch *w, unsigned max_cgroups, unsigned max_per_tenant)
{
	share_set(&w->share, max_cgroups, max_per_tenant);
}

static void removed(struct wbg_watch *w, struct wbg_cgroup *c, bool by_rescan)
{
	struct wbg_cgroup *root = tenant_root(w, c->path);

	if (root && root->tenant_members > 0)
		root->tenant_members--;
	share_give(&w->share, c->pooled);
	c->removed = true;
	/* The kernel already dropped the watches of a removed directory. */
	if (c->wd_dir >= 0 && by_rescan)
		(void)inotify_rm_watch(w->fd, c->wd_dir);
	if (c->wd_events >= 0 && by_rescan)
		(void)inotify_rm_watch(w->fd, c->wd_events);
	if (c->in_scope && w->ops->removed)
		w->ops->removed(w, c, by_rescan);
	registry_remove(w->reg, c);
}

static unsigned depth_of(const char *path)
{
	unsigned d = *path ? 1 : 0;

	for (; *path; path++)
		d += *path == '/';
	return d;
}

/* A path we cannot name in PATH_MAX bytes, or deeper than max_depth (a
 * tenant's chain: every path syscall costs its depth, so a deep chain
 * would cost the square): not tracked, counted, and said once per walk. */
static bool path_fits(struct wbg_watch *w, const char *path)
{
	if (w->max_depth && depth_of(path) > w->max_depth) {
		w->paths_too_deep++;
		if (!w->too_long_logged)
			log_warning("Not tracking cgroups deeper than %u levels ([daemon] max_depth; first: %.64s...)",
				    w->max_depth, path);
		w->too_long_logged = true;
		return false;
	}
	if (strlen(w->root) + 1 + strlen(path) < PATH_MAX)
		return true;
	w->paths_too_long++;
	if (!w->too_long_logged)
		log_warning("Not tracking cgroups whose path is longer than %d bytes (first: %.64s...)", PATH_MAX - 1, path);
	w->too_long_logged = true;
	return false;
}

/* Tracks one cgroup if new. Sets *ret_descend when what is below it is in
 * scope and may hold cgroups. */
static int track_one(struct wbg_watch *w, const char *path, const struct stat *st, bool *ret_descend)
{
	char p[PATH_MAX];
	struct wbg_cgroup *c;
	bool ancestor_only;
	int r;

	*ret_descend = false;
	if (!watch_in_scope(w, path, &ancestor_only) || !path_fits(w, path))
		return 0;
	if (!join(p, sizeof(p), w->root, path))
		return 0;
	c = registry_find_path(w->reg, path);
	if (c && c->id != st->st_ino) {
		/* Removed and recreated between two looks: the old one is gone. */
		removed(w, c, true);
		c = NULL;
	}
	if (!c) {
		struct wbg_cgroup *root;
		bool pooled;

		if (!within_caps(w, path, &root, &pooled))
			return 0;
		r = registry_add(w->reg, st->st_ino, path, &c);
		if (r < 0)
			share_give(&w->share, pooled);
		if (r == -EEXIST)
			return 0;
		if (r < 0)
			return r;
		c->pooled = pooled;
		if (root)
			root->tenant_members++;
		c->in_scope = !ancestor_only;
		r = add_watches(w, c);
		if (r == -ENOSPC || r == -ENOMEM) {
			/* Out of inotify watches (the limit, or kernel memory):
			 * its parent's watch still sees the removal, and a later
			 * rescan retries; counted, never silent. */
			w->watch_failures++;
			w->watch_limit_hit = true;
			log_warning_errno(r, "Cannot watch %s (will retry)", p);
		} else if (r == -ENOENT) {
			removed(w, c, true);
			return 0;
		} else if (r < 0)
			return log_error_errno(r, "Cannot watch %s", p);
		c->populated = read_populated(w, c);
		if (c->in_scope && w->ops->tracked)
			w->ops->tracked(w, c);
	} else if (c->wd_dir < 0 || (c->in_scope && *c->path && c->wd_events < 0)) {
		/* missing a watch from an earlier failure: try again */
		r = add_watches(w, c);
		if (r == -ENOSPC || r == -ENOMEM)
			w->watch_limit_hit = true;
	}
	c->seen = w->generation;
	*ret_descend = true;
	return 0;
}

/* A stack of cgroup paths still to visit, on the heap. */
struct pending_dirs {
	char **v;
	size_t n, cap;
};

static int push_dir(struct pending_dirs *d, const char *parent, const char *name)
{
	char *p;

	if (d->n == d->cap) {
		char **v = realloc(d->v, (d->cap = d->cap ? d->cap * 2 : 64) * sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */

		if (!v)
			return -ENOMEM;
		d->v = v;
	}
	if (asprintf(&p, "%s%s%s", parent, *parent && name ? "/" : "", name ? name : "") < 0)
		return -ENOMEM;
	d->v[d->n++] = p;
	return 0;
}

/* Tracks the cgroup at path and everything below it: a child created before
 * our watch on its parent existed is found here. Iterative, with the paths
 * still to visit on the heap, so a tenant's chain of thousands of nested
 * cgroups costs heap, not frames. Its own readdir and d_type, not fts: fts
 * skips entries once a directory's link count says no subdirectory is left,
 * and a `mkdir -p` racing the walk makes that count stale. */
static int track(struct wbg_watch *w, const char *path)
{
	struct pending_dirs todo = { 0 };
	int r = push_dir(&todo, path, NULL);

	while (r >= 0 && todo.n > 0) {
		_cleanup_free_ char *rel = todo.v[--todo.n];
		_cleanup_closedir_ DIR *d = NULL;
		char p[PATH_MAX];
		struct dirent *de;
		struct stat st;
		bool descend;

		if (!path_fits(w, rel) || !join(p, sizeof(p), w->root, rel) || stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* too deep or long (counted), or vanished under us: normal */
		r = track_one(w, rel, &st, &descend);
		if (r != -ENOMEM)
			r = 0; /* a watch refused: logged, and its subtree is still walked */
		if (r < 0 || !descend)
			continue;
		d = opendir(p);
		while (d && (de = readdir(d)))
			if ((de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) && de->d_name[0] != '.') {
				r = push_dir(&todo, rel, de->d_name);
				if (r < 0)
					break;
			}
	}
	while (todo.n > 0)
		free(todo.v[--todo.n]);
	free(todo.v);
	return r == -ENOMEM ? r : 0;
}

struct sweep {
	struct wbg_cgroup **v;
	size_t n, cap;
	size_t dropped;
	uint64_t gen;
};

static void collect_unseen(struct wbg_cgroup *c, void *userdata)
{
	struct sweep *s = userdata;

	if (c->seen == s->gen)
		return;
	if (s->n == s->cap) {
		struct wbg_cgroup **v = realloc(s->v, (s->cap = s->cap ? s->cap * 2 : 64) * sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers */

		if (!v) {
			s->dropped++; /* not reported this time: the next rescan will */
			return;
		}
		s->v = v;
	}
	s->v[s->n++] = c;
}

int watch_rescan(struct wbg_watch *w)
{
	struct sweep s = { 0 };
	int r;

	w->generation++;
	w->rescans++;
	w->rescan_needed = false;
	w->watch_limit_hit = false;
	w->too_long_logged = false;
	w->caps_logged = false;
	/* Our own walk, not libcgroup's: its depth bound only filters what it
	 * reports, while it still reads every level of a tenant's chain and
	 * stats every control file by full path (minutes for 2,000 levels). */
	r = track(w, "");
	if (r == -ENOMEM)
		return log_oom();
	log_debug("Walked %s, %u levels deep: %zu cgroups", w->root, w->max_depth, w->reg->n);
	/* Whatever was not found again is gone, and its removal event lost. */
	s.gen = w->generation;
	registry_foreach(w->reg, collect_unseen, &s);
	if (s.dropped) {
		/* out of memory for the list: these stay tracked, and the next
		 * rescan (asked for now) reports them; said, never silent */
		log_warning("Rescan: %zu vanished cgroups not reported (out of memory); rescanning again", s.dropped);
		w->rescan_needed = true;
	}
	for (size_t i = 0; i < s.n; i++) {
		w->rescan_removals++;
		removed(w, s.v[i], true);
	}
	free(s.v);
	return 0;
}

static void dispatch(struct wbg_watch *w, const struct inotify_event *e)
{
	struct wbg_cgroup *c;
	bool is_events;

	if (e->mask & IN_Q_OVERFLOW) {
		w->overflows++;
		w->rescan_needed = true;
		return;
	}
	c = registry_find_wd(w->reg, e->wd, &is_events);
	if (!c)
		return;
	if (is_events) {
		bool pop;

		if (e->mask & IN_IGNORED) {
			registry_set_wd(w->reg, c, true, -1);
			return;
		}
		pop = read_populated(w, c);
		if (pop != c->populated) {
			c->populated = pop;
			if (w->ops->populated)
				w->ops->populated(w, c, pop);
		}
		return;
	}
	if (e->mask & (IN_DELETE_SELF | IN_IGNORED)) {
		registry_set_wd(w->reg, c, false, -1);
		if (!*c->path)
			return;
		removed(w, c, false);
		return;
	}
	if (e->len && (e->mask & IN_ISDIR)) {
		char child[PATH_MAX];

		if (!join(child, sizeof(child), c->path, e->name) || !path_fits(w, child)) {
			if (strlen(c->path) + 1 + strlen(e->name) >= sizeof(child))
				w->paths_too_long++; /* as path_fits() counts it */
			return;
		}
		if (e->mask & (IN_CREATE | IN_MOVED_TO)) {
			if (track(w, child) == -ENOMEM)
				log_oom();
		} else if (e->mask & (IN_DELETE | IN_MOVED_FROM)) {
			struct wbg_cgroup *gone = registry_find_path(w->reg, child);

			if (gone)
				removed(w, gone, false);
		}
	}
}

#define WATCH_READS_PER_CALL 4

int watch_process(struct wbg_watch *w)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

	/* A bounded batch per call (about 8,000 events): a tenant making
	 * cgroups as fast as they are read would otherwise hold the loop, and
	 * every hook call and probe behind it, for as long as it liked. The
	 * rest is read at the loop's next turn (the fd is level-triggered). */
	for (unsigned reads = 0; reads < WATCH_READS_PER_CALL; reads++) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return log_error_errno(errno, "Reading inotify events");
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			dispatch(w, e);
			p += sizeof(*e) + e->len;
		}
	}
	if (w->rescan_needed) {
		log_notice("Rescanning cgroupfs: the inotify queue overflowed");
		return watch_rescan(w);
	}
	return 0;
}

void watch_metrics(FILE *f, const struct wbg_watch *w)
{
	metric_counter(f, "wbguard_inotify_overflows_total", "inotify queue overflows (each answered by a rescan).",
		       w->overflows);
	metric_counter(f, "wbguard_inotify_watch_failures_total", "Watches the inotify limit refused (retried later).",
		       w->watch_failures);
	metric_counter(f, "wbguard_cgroups_path_too_long_total",
		       "Cgroups not tracked because their path is longer than PATH_MAX.", w->paths_too_long);
	metric_counter(f, "wbguard_cgroups_too_deep_total",
		       "Cgroups not tracked because they are deeper than [daemon] max_depth.", w->paths_too_deep);
	metric_family(f, "wbguard_cgroups_refused_total", "counter",
		      "Cgroups not tracked because a cap was reached (counted per attempt: a rescan tries again).");
	share_metrics(f, &w->share, "wbguard_cgroups_refused_total",
		      (const char *const[_WBG_SHARE_REFUSAL_MAX]){ [WBG_SHARE_FULL] = "max_cgroups",
								   [WBG_SHARE_TENANT] = "max_cgroups_per_tenant",
								   [WBG_SHARE_POOL] = "tenant_pool" });
	metric_counter(f, "wbguard_rescans_total", "Walks of the cgroup tree after start-up.",
		       w->rescans > 0 ? w->rescans - 1 : 0);
	metric_counter(f, "wbguard_rescan_removals_total", "Removals found by a rescan rather than by an event.",
		       w->rescan_removals);
	metric_value(f, "wbguard_tracked_cgroups", "gauge", "Cgroups wbguardd tracks now.", (double)w->reg->n);
}
