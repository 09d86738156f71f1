/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lifecycle's flusher and kernel on a host (lifecycle-host.h), against
 * temporary trees standing in for cgroupfs, /proc/sys, debugfs and the
 * state dir; and the policy that makes the lifecycle's parameters. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "wbg-config.h"
#include "lifecycle-host.h"
#include "wbg-kernel.h"
#include "pending.h"
#include "wbg-flush.h"
#include "wbg-cgroup.h"
#include "tap.h"
#include "test-files.h"

static const char mounts_text[] = "22 1 0:21 / / rw - overlay overlay rw\n"
				  "25 22 254:0 / /mnt/ext4 rw - ext4 /dev/vda rw\n"
				  "27 22 254:16 / /mnt/xfs rw - xfs /dev/vdb rw\n";

static const char wb_stats_text[] = "WbCgIno:                    1\n"
				    "b_dirty:                    0\n"
				    "state:                      1\n"
				    "\n"
				    "WbCgIno:                 4242\n"
				    "WbWriteback:             1024 kB\n"
				    "WbReclaimable:          51200 kB\n"
				    "b_dirty:                   17\n"
				    "state:                      5\n"
				    "\n";

/* A fixture: a configuration whose roots are below one temporary dir, and
 * a host over it with the mount table above; no pool, BPF or scratch. */
struct fixture {
	char dir[64];
	struct wbg_config cfg;
	struct wbg_mounts mounts;
	struct wbg_lifecycle_host host;
};

static void mkdirs(const char *dir, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
}

static void fixture_init(struct fixture *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/wbg-lchost.XXXXXX");
	if (!mkdtemp(f->dir))
		abort();
	config_init(&f->cfg);
	snprintf(f->cfg.cgroup_root, sizeof(f->cfg.cgroup_root), "%s/cgroup", f->dir);
	snprintf(f->cfg.state_dir, sizeof(f->cfg.state_dir), "%s/state", f->dir);
	snprintf(f->cfg.proc_sys, sizeof(f->cfg.proc_sys), "%s/sys", f->dir);
	mkdirs(f->dir, "cgroup/pod/ctr");
	mkdirs(f->dir, "state");
	mkdirs(f->dir, "sys/vm");
	mountinfo_parse(mounts_text, &f->mounts);
	f->host = (struct wbg_lifecycle_host){ .cfg = &f->cfg, .mounts = &f->mounts };
}

static void fixture_done(struct fixture *f)
{
	char cmd[128];

	mountinfo_free(&f->mounts);
	config_done(&f->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	(void)system(cmd);
}

static void test_drain_after(void)
{
	struct fixture f;

	fixture_init(&f);
	CHECK(lifecycle_drain_after_usec(f.cfg.proc_sys) == 52500000ULL,
	      "drain time without the sysctls: the kernel's defaults (30 s + 5 s) x 1.5");
	test_put(f.dir, "sys/vm/dirty_expire_centisecs", "1000\n");
	test_put(f.dir, "sys/vm/dirty_writeback_centisecs", "100\n");
	CHECK(lifecycle_drain_after_usec(f.cfg.proc_sys) == 16500000ULL,
	      "drain time: (expire + writeback interval) x 1.5 from the sysctls");
	test_put(f.dir, "sys/vm/dirty_expire_centisecs", "soon\n");
	CHECK(lifecycle_drain_after_usec(f.cfg.proc_sys) == 16500000ULL - 15000000ULL + 45000000ULL,
	      "an unreadable expiry counts as the default 30 s, the writeback interval as read");
	fixture_done(&f);
}

static void test_params(void)
{
	struct fixture f;
	struct wbg_lifecycle_params p;

	fixture_init(&f);
	f.cfg.flush_mode = WBG_FLUSH_ON_EVIDENCE;
	f.cfg.timeout_usec = 7000000;
	f.cfg.watch_max = 99;
	p = lifecycle_host_params(&f.cfg, NULL);
	CHECK(!p.on_evidence, "on-evidence configured, no BPF: removals are flushed, not watched");
	CHECK(!p.at_exit, "on-evidence is not the exit recipe");
	CHECK(p.timeout_usec == 7000000, "the flush timeout is the configuration's");
	CHECK(p.watch.max == 99, "the watch table's size is the configuration's");
	CHECK(p.watch.drain_after_usec == lifecycle_drain_after_usec(f.cfg.proc_sys),
	      "the watch's drain time comes from the configured /proc/sys");
	f.cfg.flush_mode = WBG_FLUSH_EXIT;
	p = lifecycle_host_params(&f.cfg, NULL);
	CHECK(p.at_exit, "exit mode: the exit recipe");
	fixture_done(&f);
}

static void test_kernel_ops(void)
{
	const struct wbg_kernel_ops *k = &lifecycle_host_kernel_ops;
	struct fixture f;
	uint64_t dirty = 0, wb = 0;
	struct wbg_wb_census c = { 0 };
	char debugfs[128];

	fixture_init(&f);
	test_put(f.dir, "cgroup/pod/memory.stat", "anon 0\nfile_dirty 8192\nfile_writeback 4096\n");
	CHECK(k->read_dirty(&f.host, "pod", &dirty, &wb) == 0, "memory.stat of a live cgroup is read");
	CHECK(dirty == 8192, "its file_dirty");
	CHECK(wb == 4096, "its file_writeback");
	CHECK(k->read_dirty(&f.host, "gone", &dirty, &wb) == -ENOENT, "a removed cgroup's: -ENOENT");
	CHECK(k->has_children(&f.host, "pod"), "a cgroup with a child cgroup has children");
	CHECK(!k->has_children(&f.host, "pod/ctr"), "a leaf has none");
	CHECK(!k->has_children(&f.host, "gone"), "a removed cgroup has none");
	CHECK(k->cleanup(&f.host) == -EOPNOTSUPP, "no scratch cgroup: no cleanup cycle");
	CHECK(k->census(&f.host, &c) == -ENOENT, "no debugfs: wb_stats cannot say");
	snprintf(debugfs, sizeof(debugfs), "%s/debug", f.dir);
	mkdirs(f.dir, "debug/bdi/254:0");
	test_put(f.dir, "debug/bdi/254:0/wb_stats", wb_stats_text);
	f.host.debugfs = debugfs;
	CHECK(k->census(&f.host, &c) == 0, "wb_stats read from the host's debugfs");
	CHECK(c.n_dirty == 1 && c.dirty[0] == 4242, "dirty: only the cgroup whose wb has dirty IO (%zu)", c.n_dirty);
	CHECK(wbstats_set_has(c.listed, c.n_listed, 4242) && c.n_listed > c.n_dirty, "listed: every wb (%zu)", c.n_listed);
	wbstats_census_done(&c);
	fixture_done(&f);
}

static void test_flusher_ops(void)
{
	const struct wbg_flusher_ops *fl = &lifecycle_host_flusher_ops;
	struct fixture f;
	struct wbg_plan plan;
	struct wbg_pending *pending = NULL;
	size_t n = 0;
	dev_t ns[] = { makedev(254, 16) };
	struct wbg_cgroup c = { .ns_devs = ns, .n_ns_devs = 1 };
	struct wbg_handover h = { .id = 17, .cgroup_id = 4242, .path = (char *)"pod/ctr" };

	fixture_init(&f);
	plan = (struct wbg_plan){ 0 }; /* plan_mounts adds to what the caller holds */
	CHECK(fl->plan_mounts(&f.host, &plan) == 0, "a plan of every mount");
	CHECK(plan.n == 2, "ext4 and xfs, not the overlay (%zu)", plan.n);
	plan_free(&plan);
	CHECK(fl->plan(&f.host, 4242, &c, false, &plan) == 0, "a plan for a cgroup without BPF");
	CHECK(strcmp(plan.source, "mountns") == 0, "without BPF: what its mount namespace showed");
	CHECK(plan.n == 1 && plan.t[0].dev == makedev(254, 16), "only the xfs its processes saw");
	CHECK(fl->submit(&f.host, &plan.t[0], FLUSH_FOR_HANDOVER, 17) == -EAGAIN, "no pool yet: nothing submitted");
	CHECK(fl->pending_save(&f.host, &h, &plan) == 0, "a flush in flight recorded in the state dir");
	plan_free(&plan);
	CHECK(pending_load(f.cfg.state_dir, &pending, &n) == 0 && n == 1, "the record is there for the next start");
	CHECK(n == 1 && pending[0].id == 17 && pending[0].cgroup_id == 4242 && strcmp(pending[0].path, "pod/ctr") == 0,
	      "it names the handover and its cgroup");
	CHECK(n == 1 && pending[0].n == 1 && pending[0].devs[0] == makedev(254, 16) && !pending[0].bdev[0],
	      "it names the filesystem the plan flushes");
	pending_free(pending, n);
	free(pending); /* pending_free() frees the entries, the caller the array */
	fl->pending_drop(&f.host, 17);
	CHECK(pending_load(f.cfg.state_dir, &pending, &n) == 0 && n == 0, "dropped once the flush is over");
	pending_free(pending, n);
	free(pending); /* pending_free() frees the entries, the caller the array */
	fixture_done(&f);
}

int main(void)
{
	test_drain_after();
	test_params();
	test_kernel_ops();
	test_flusher_ops();
	return tap_done();
}
