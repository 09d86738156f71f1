/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroupfs watcher against a temporary tree standing in for cgroupfs:
 * directories are cgroups, cgroup.events files say "populated N". inotify
 * sees mkdir, rmdir and writes there as it does on cgroupfs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "tap.h"
#include "watch-cgroupfs.h"

static char root[] = "/tmp/wbg-watch.XXXXXX";
static char log_[4096];

static void tracked(struct wbg_watch *w, struct wbg_cgroup *c)
{
	snprintf(log_ + strlen(log_), sizeof(log_) - strlen(log_), "+%s ", c->path);
}

static void populated(struct wbg_watch *w, struct wbg_cgroup *c, bool p)
{
	snprintf(log_ + strlen(log_), sizeof(log_) - strlen(log_), "%c%s ", p ? 'P' : 'E', c->path);
}

static void removed(struct wbg_watch *w, struct wbg_cgroup *c, bool by_rescan)
{
	snprintf(log_ + strlen(log_), sizeof(log_) - strlen(log_), "%s%s ", by_rescan ? "R" : "-", c->path);
}

static const struct wbg_watch_ops ops = { tracked, populated, removed };

static void mkcg(const char *path, int pop)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, path);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%s/cgroup.events", root, path);
	f = fopen(p, "w");
	fprintf(f, "populated %d\nfrozen 0\n", pop);
	fclose(f);
}

static void set_pop(const char *path, int pop)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s/cgroup.events", root, path);
	f = fopen(p, "w");
	fprintf(f, "populated %d\nfrozen 0\n", pop);
	fclose(f);
}

static void rmcg(const char *path)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s/cgroup.events", root, path);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s", root, path);
	rmdir(p);
}

/* A chain of n nested directories named name below path, made with
 * mkdirat so that its depth is not bounded by PATH_MAX here. */
static void mkchain(const char *path, const char *name, int n)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, path);
	mkdir(p, 0755);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < n && fd >= 0; i++) {
		int next;

		(void)mkdirat(fd, name, 0755);
		next = openat(fd, name, O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = next;
	}
	if (fd >= 0)
		close(fd);
}

static void pump(struct wbg_watch *w)
{
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };

	while (poll(&pfd, 1, 50) > 0)
		watch_process(w);
}

int main(void)
{
	struct wbg_registry reg = { 0 };
	struct wbg_watch w;
	char *roots[] = { "kubepods.slice" };
	bool anc;

	if (!mkdtemp(root))
		return 1;
	mkcg("system.slice", 1);
	mkcg("system.slice/a.service", 1);
	mkcg("kubepods.slice", 1);

	CHECK(watch_init(&w, root, NULL, 0, &reg, &ops, NULL) == 0, "init");
	CHECK(watch_rescan(&w) == 0, "initial walk");
	CHECK(reg.n == 4, "root and three cgroups tracked (%zu)", reg.n);
	CHECK(strstr(log_, "+system.slice/a.service ") != NULL, "existing cgroup tracked: %s", log_);

	log_[0] = 0;
	mkcg("kubepods.slice/pod1", 1);
	pump(&w);
	CHECK(strstr(log_, "+kubepods.slice/pod1 ") != NULL, "new cgroup seen: %s", log_);
	log_[0] = 0;
	set_pop("kubepods.slice/pod1", 0);
	pump(&w);
	CHECK(strcmp(log_, "Ekubepods.slice/pod1 ") == 0, "populated 1 -> 0 seen: '%s'", log_);
	log_[0] = 0;
	set_pop("kubepods.slice/pod1", 0);
	pump(&w);
	CHECK(log_[0] == 0, "an unchanged populated is no news: '%s'", log_);
	log_[0] = 0;
	rmcg("kubepods.slice/pod1");
	pump(&w);
	CHECK(strstr(log_, "-kubepods.slice/pod1 ") != NULL, "removal seen: %s", log_);
	{
		/* a flood of new cgroups (a tenant's mkdir loop): one call
		 * reads a bounded batch and gives the loop back; the rest
		 * comes at the next calls */
		char p[128];
		size_t before = reg.n;
		struct pollfd pfd = { .fd = w.fd, .events = POLLIN };

		mkcg("system.slice/flood.service", 0);
		pump(&w);
		for (int i = 0; i < 8000; i++) {
			snprintf(p, sizeof(p), "%s/system.slice/flood.service/cgroup-number-%05d", root, i);
			(void)mkdir(p, 0755);
		}
		CHECK(watch_process(&w) == 0 && poll(&pfd, 1, 0) == 1 && reg.n - before < 8000,
		      "8,000 new cgroups (384 KiB of events): one call took %zu, the rest left for the loop's next turns", reg.n - before - 1);
		pump(&w);
		CHECK(reg.n - before == 8001, "and the next turns took them all (%zu)", reg.n - before);
		snprintf(p, sizeof(p), "rm -rf %s/system.slice/flood.service", root);
		log_[0] = 0;
		if (system(p) != 0)
			abort();
		pump(&w);
		log_[0] = 0;
	}
	CHECK(registry_find_path(&reg, "kubepods.slice/pod1") == NULL, "removed cgroup dropped from the registry");

	/* A subtree created in one go (mkdir -p) before the watch on its
	 * parent could see the children: found by the recursive track. */
	log_[0] = 0;
	mkcg("kubepods.slice/pod2", 1);
	mkcg("kubepods.slice/pod2/c1", 1);
	mkcg("kubepods.slice/pod2/c1/c2", 1);
	pump(&w);
	CHECK(strstr(log_, "+kubepods.slice/pod2/c1/c2 ") != NULL, "nested cgroups found: %s", log_);

	/* Lost events: removals made while nobody read the queue are reported
	 * by a rescan, never lost. */
	log_[0] = 0;
	watch_done(&w);
	registry_free(&reg);
	CHECK(watch_init(&w, root, NULL, 0, &reg, &ops, NULL) == 0 && watch_rescan(&w) == 0, "re-init");
	rmcg("system.slice/a.service"); /* its events stay unread, as after an overflow */
	log_[0] = 0;
	CHECK(watch_rescan(&w) == 0, "rescan");
	CHECK(strcmp(log_, "Rsystem.slice/a.service ") == 0, "rescan reports the removal it missed: '%s'", log_);
	CHECK(w.rescan_removals == 1, "counted as a rescan removal");
	log_[0] = 0;
	pump(&w);
	CHECK(log_[0] == 0, "the late inotify events report nothing twice: '%s'", log_);
	watch_done(&w);
	registry_free(&reg);

	/* Scope: only kubepods.slice gets reports; its ancestors are watched
	 * so it would be seen if created later. */
	CHECK(watch_init(&w, root, roots, 1, &reg, &ops, NULL) == 0, "init with roots");
	CHECK(watch_in_scope(&w, "kubepods.slice/pod2", &anc) && !anc, "inside a root");
	CHECK(watch_in_scope(&w, "", &anc) && anc, "the root is an ancestor");
	CHECK(!watch_in_scope(&w, "system.slice", &anc), "outside");
	CHECK(!watch_in_scope(&w, "kubepods.slicex", &anc), "a name sharing the prefix is outside");
	w.exclude = strdup("kubepods.slice/pod2");
	CHECK(!watch_in_scope(&w, "kubepods.slice/pod2/c1", &anc), "the excluded subtree is outside");
	watch_done(&w);
	registry_free(&reg);

	/* A tenant's chain of 2,000 nested cgroups (a delegated subtree): the
	 * walk is iterative, so neither the start, a rescan, nor a chain made
	 * faster than inotify is read exhausts the stack (8 KiB a level
	 * crashed the recursive walk under the default 8 MiB). The temporary
	 * tree is walked as the real one and the DaemonSet's host_root are:
	 * the walk is ours. */
	mkchain("deep", "d", 2000);
	CHECK(watch_init(&w, root, NULL, 0, &reg, &ops, NULL) == 0 && watch_rescan(&w) == 0,
	      "start with a 2,000-level chain");
	{
		size_t before = reg.n;

		CHECK(before >= 2001, "the whole chain is tracked (%zu cgroups)", before);
		CHECK(watch_rescan(&w) == 0 && reg.n == before, "a rescan walks it again (%zu)", reg.n);
		mkchain("deep2", "e", 2000); /* while running, faster than events are read */
		pump(&w);
		CHECK(reg.n == before + 2001, "a chain made while running is tracked (%zu new)", reg.n - before);
	}
	/* The default bound: 32 levels tracked, the rest counted. */
	watch_done(&w);
	registry_free(&reg);
	CHECK(watch_init(&w, root, NULL, 0, &reg, &ops, NULL) == 0, "init with max_depth 32");
	w.max_depth = 32;
	CHECK(watch_rescan(&w) == 0 && reg.n < 200 && w.paths_too_deep > 0,
	      "max_depth 32: the chains are tracked 32 levels deep (%zu cgroups), the rest counted (%llu)", reg.n,
	      (unsigned long long)w.paths_too_deep);
	mkchain("deep3", "f", 100);
	pump(&w);
	CHECK(registry_find_path(&reg, "deep3/f/f/f") && !registry_find_path(&reg, "deep3/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f/f"),
	      "a chain made while running: 32 levels, not 33");
	w.max_depth = 0;
	/* Deeper than PATH_MAX can name: not tracked, counted, no crash. */
	mkchain("long", "a-name-of-thirty-two-characters", 200);
	pump(&w);
	CHECK(w.paths_too_long > 0, "paths over PATH_MAX are counted (%llu)", (unsigned long long)w.paths_too_long);
	CHECK(watch_rescan(&w) == 0, "a rescan with them survives");
	watch_done(&w);
	registry_free(&reg);
	{
		/* Caps: a tenant (here system.slice/t.service's subtree) has a
		 * share of the tracked cgroups, and the node a cap; what is
		 * refused is counted, what another tenant makes is tracked. */
		char p[128];
		uint64_t refused;

		mkcg("system.slice", 0);
		mkcg("system.slice/t.service", 0);
		mkcg("system.slice/u.service", 0);
		CHECK(watch_init(&w, root, NULL, 0, &reg, &ops, NULL) == 0, "init with caps");
		watch_set_caps(&w, 0, 10);
		CHECK(watch_rescan(&w) == 0, "rescan");
		refused = w.share.refused[WBG_SHARE_TENANT]; /* the chains above are tenants too */
		for (int i = 0; i < 50; i++) {
			snprintf(p, sizeof(p), "system.slice/t.service/c%d", i);
			mkcg(p, 0);
		}
		pump(&w);
		{
			struct wbg_cgroup *t = registry_find_path(&reg, "system.slice/t.service");

			CHECK(t && t->tenant_members == 10 && w.share.refused[WBG_SHARE_TENANT] - refused == 40,
			      "a tenant's 50 cgroups: 10 tracked, 40 refused and counted (%u, %llu)", t ? t->tenant_members : 0,
			      (unsigned long long)(w.share.refused[WBG_SHARE_TENANT] - refused));
		}
		mkcg("system.slice/u.service/mine", 0);
		pump(&w);
		CHECK(registry_find_path(&reg, "system.slice/u.service/mine") != NULL, "another tenant's cgroup is tracked");
		{
			/* whose share of the BPF inode records each one's writes take */
			struct wbg_cgroup *t = registry_find_path(&reg, "system.slice/t.service"),
					  *u = registry_find_path(&reg, "system.slice/u.service"),
					  *mine = registry_find_path(&reg, "system.slice/u.service/mine"),
					  *c1 = registry_find_path(&reg, "system.slice/t.service/c1"),
					  *slice = registry_find_path(&reg, "system.slice");

			CHECK(t && u && mine && c1 && slice && watch_tenant_id(&w, c1) == t->id &&
				      watch_tenant_id(&w, mine) == u->id && watch_tenant_id(&w, t) == t->id &&
				      watch_tenant_id(&w, u) != t->id,
			      "tenant ids: a cgroup's tenant root's id (its own for a root), another tenant's differs");
		}
		rmcg("system.slice/t.service/c0");
		pump(&w);
		mkcg("system.slice/t.service/again", 0);
		pump(&w);
		CHECK(registry_find_path(&reg, "system.slice/t.service/again") != NULL,
		      "a removal gives the tenant its slot back");
		watch_set_caps(&w, reg.n, 10);
		mkcg("system.slice/u.service/more", 0);
		pump(&w);
		CHECK(!registry_find_path(&reg, "system.slice/u.service/more") && w.share.refused[WBG_SHARE_FULL] == 1,
		      "the node's cap: refused and counted");
		watch_done(&w);
		registry_free(&reg);
		snprintf(p, sizeof(p), "rm -rf %s/system.slice", root);
		if (system(p) != 0)
			return 1;
	}
	{
		/* Fair shares: 256 on the node (floors of 2 for 64 tenants, a
		 * pool of 128), 100 per tenant. Two tenants making 100 each
		 * empty the pool; a third still gets its floor. */
		char p[128];
		static const char *const tenants[] = { "a", "b", "c" };
		static const int made[] = { 100, 100, 3 };
		unsigned held[3];

		mkcg("t.slice", 0);
		for (int t = 0; t < 3; t++) {
			snprintf(p, sizeof(p), "t.slice/%s.service", tenants[t]);
			mkcg(p, 0);
		}
		char *scope[] = { (char *)"t.slice" }; /* not the trees above */

		CHECK(watch_init(&w, root, scope, 1, &reg, &ops, NULL) == 0, "init with shares");
		watch_set_caps(&w, 256, 100);
		CHECK(watch_rescan(&w) == 0 && w.share.floor == 2 && w.share.pool == 128, "floor %u, pool %u",
		      w.share.floor, w.share.pool);
		for (int t = 0; t < 3; t++) {
			for (int i = 0; i < made[t]; i++) {
				snprintf(p, sizeof(p), "t.slice/%s.service/c%d", tenants[t], i);
				mkcg(p, 0);
			}
			pump(&w);
			snprintf(p, sizeof(p), "t.slice/%s.service", tenants[t]);
			held[t] = registry_find_path(&reg, p) ? registry_find_path(&reg, p)->tenant_members : 0;
		}
		CHECK(held[0] == 100 && held[1] == 2 + 30 && held[2] == 2 && w.share.refused[WBG_SHARE_POOL] == 68 + 1,
		      "a: its cap (%u); b: its floor and the rest of the pool (%u); c: its floor (%u); refused for the "
		      "pool: %llu",
		      held[0], held[1], held[2], (unsigned long long)w.share.refused[WBG_SHARE_POOL]);
		rmcg("t.slice/a.service/c7");
		pump(&w);
		mkcg("t.slice/c.service/late", 0);
		pump(&w);
		CHECK(registry_find_path(&reg, "t.slice/c.service/late") != NULL && w.share.pooled == 128,
		      "a's removal gives its pool slot back, which c then takes (pooled %u)", w.share.pooled);
		watch_done(&w);
		registry_free(&reg);
	}
	{
		char p[512];

		snprintf(p, sizeof(p), "rm -rf %s", root);
		if (system(p) != 0)
			return 1;
	}
	return tap_done();
}
