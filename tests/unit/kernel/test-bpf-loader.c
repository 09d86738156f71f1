/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF loader's user-space side that needs no kernel: the event ring's
 * sample callback (bpf-maps.c), which passes an event on only when it is
 * as long as its kind carries (wbguard.h) and its removal path is a
 * string; which group a program is loaded with; and what the loader says
 * of its programs and features, over a struct wbg_bpf of plain data. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpf-internal.h"
#include "bpf-programs.h"
#include "tap.h"

/* What the ring's reader was given */
static struct {
	unsigned calls;
	const struct wbg_ring_event *last;
	int result; /* what it returns */
} seen;

static int on_event(const struct wbg_ring_event *e, void *userdata)
{
	seen.calls++;
	seen.last = e;
	return seen.result;
}

static struct wbg_bpf ring = { .ring_cb = on_event };

/* Two pages, the second one inaccessible: an event placed to end where
 * the first does makes a read past it a fault, sanitizer or not. What the
 * reader was given stays readable until the next sample. */
static char *pages;
static size_t page;

/* e's first size bytes as the ring hands them over: 8-aligned, their
 * record rounded up to 8 bytes (zeros here, so that a read of them finds a
 * NUL the event did not carry), then the guard page. *ret_got: the event
 * the reader was given, if it was the ring's own bytes (no copy). */
static int sample(const struct wbg_ring_event *e, size_t size, const struct wbg_ring_event **ret_got)
{
	size_t room = (size + 7) & ~(size_t)7;
	char *held;
	int r;

	if (!pages) {
		page = sysconf(_SC_PAGESIZE);
		pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pages == MAP_FAILED || mprotect(pages + page, page, PROT_NONE) < 0)
			abort();
	}
	held = pages + page - room;
	memset(held, 0, room);
	memcpy(held, e, size);
	seen.calls = 0;
	seen.last = NULL;
	r = wbg_bpf_ring_sample(&ring, held, size);
	if (ret_got)
		*ret_got = (const char *)seen.last == held ? seen.last : NULL;
	return r;
}

static struct wbg_ring_event event(__u32 kind)
{
	struct wbg_ring_event e;

	memset(&e, 0, sizeof(e));
	e.cgroup_id = 4242;
	e.kind = kind;
	e.level = 3;
	return e;
}

static void test_kinds(void)
{
	struct wbg_ring_event e = event(WBG_RING_DIRTY);
	const struct wbg_ring_event *got = NULL;

	CHECK(sample(&e, WBG_RING_HEAD_SIZE, &got) == 0 && seen.calls == 1 && got,
	      "dirty: the head alone passed on, as is");
	CHECK(got && got->cgroup_id == 4242 && got->kind == WBG_RING_DIRTY && got->level == 3,
	      "dirty: its head's fields read back");

	e = event(WBG_RING_EVIDENCE);
	e.evidence.dev = 8 << 20 | 1;
	e.evidence.gen = 7;
	e.evidence.ino = 123456;
	e.evidence.dirtier = 99;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(evidence), &got) == 0 && seen.calls == 1 && got,
	      "evidence: head and its part passed on");
	CHECK(got && got->evidence.dev == (8 << 20 | 1) && got->evidence.gen == 7 && got->evidence.ino == 123456 &&
		      got->evidence.dirtier == 99,
	      "evidence: the inode and the dirtier read back");

	e = event(WBG_RING_STALL);
	snprintf(e.stall.bdi, sizeof(e.stall.bdi), "8:16");
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(stall), &got) == 0 && seen.calls == 1 && got,
	      "stall: head and its part passed on");
	CHECK(got && strcmp(got->stall.bdi, "8:16") == 0, "stall: its bdi read back");

	e = event(WBG_RING_RMDIR);
	snprintf(e.removal.path, sizeof(e.removal.path), "/kubepods/pod-a");
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal), &got) == 0 && seen.calls == 1 && got,
	      "rmdir: head and path passed on");
	CHECK(got && strcmp(got->removal.path, "/kubepods/pod-a") == 0, "rmdir: its path read back");
	e.kind = WBG_RING_RELEASE;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal), &got) == 0 && seen.calls == 1 && got &&
		      got->kind == WBG_RING_RELEASE,
	      "release: passed on with its kind");
	e.kind = WBG_RING_DIRTY;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(evidence), NULL) == 0 && seen.calls == 1,
	      "an event longer than its kind carries: passed on");
}

static void test_short(void)
{
	struct wbg_ring_event e = event(WBG_RING_DIRTY);

	CHECK(sample(&e, WBG_RING_HEAD_SIZE - 1, NULL) == 0 && seen.calls == 0, "a byte short of the head: dropped");
	CHECK(sample(&e, sizeof(e.cgroup_id), NULL) == 0 && seen.calls == 0,
	      "too short to hold a kind: dropped, its kind never read");
	e.kind = WBG_RING_EVIDENCE;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(evidence) - 1, NULL) == 0 && seen.calls == 0,
	      "evidence a byte short of its part: dropped");
	CHECK(sample(&e, WBG_RING_HEAD_SIZE, NULL) == 0 && seen.calls == 0, "evidence with the head alone: dropped");
	e.kind = WBG_RING_STALL;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(stall) - 1, NULL) == 0 && seen.calls == 0,
	      "stall a byte short of its bdi: dropped");
	/* the longest path, its NUL the byte cut off: its size, not its
	 * string, says where to stop */
	e.kind = WBG_RING_RMDIR;
	memset(e.removal.path, 'a', sizeof(e.removal.path) - 1);
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal) - 1, NULL) == 0 && seen.calls == 0,
	      "rmdir a byte short of its path: dropped, the path not read");
	e.kind = WBG_RING_RELEASE;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(stall), NULL) == 0 && seen.calls == 0,
	      "release as long as a stall: dropped");
}

static void test_unknown_kind(void)
{
	struct wbg_ring_event e = event(77);

	/* a kind this reader does not know is read as a removal (wbguard.h) */
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(evidence), NULL) == 0 && seen.calls == 0,
	      "unknown kind shorter than a removal: dropped");
	snprintf(e.removal.path, sizeof(e.removal.path), "/x");
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal), NULL) == 0 && seen.calls == 1,
	      "unknown kind as long as a removal: passed on, the reader decides");
}

static void test_path_unterminated(void)
{
	struct wbg_ring_event e = event(WBG_RING_RMDIR);

	memset(e.removal.path, 'a', sizeof(e.removal.path));
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal), NULL) == 0 && seen.calls == 0,
	      "a path with no NUL in its field: dropped, never read as a string past it");
	e.kind = 77;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal), NULL) == 0 && seen.calls == 0,
	      "an unknown kind's path with no NUL: dropped too");
	e.kind = WBG_RING_RMDIR;
	e.removal.path[sizeof(e.removal.path) - 1] = 0;
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(removal), NULL) == 0 && seen.calls == 1 &&
		      strlen(seen.last->removal.path) == sizeof(e.removal.path) - 1,
	      "the longest path BPF sends (its last byte the NUL): passed on");
	e = event(WBG_RING_STALL);
	memset(e.stall.bdi, '9', sizeof(e.stall.bdi));
	CHECK(sample(&e, WBG_RING_EVENT_SIZE(stall), NULL) == 0 && seen.calls == 1,
	      "a stall is no removal: its bdi is not taken for a path (its reader bounds it)");
}

static void test_reader_result(void)
{
	struct wbg_ring_event e = event(WBG_RING_DIRTY);

	/* libbpf stops consuming at a sample's error */
	seen.result = -EIO;
	CHECK(sample(&e, WBG_RING_HEAD_SIZE, NULL) == -EIO, "the reader's error returned to the ring");
	CHECK(sample(&e, 1, NULL) == 0, "a dropped event is no error: the ring goes on");
	seen.result = 0;
}

static void test_groups(void)
{
	CHECK(wbg_bpf_program_group("wbid_exit") == WBG_BPF_WBID, "group: wbid_ programs are the flush results'");
	CHECK(wbg_bpf_program_group("life_rmdir") == WBG_BPF_LIFE, "group: life_ programs are the removals'");
	CHECK(wbg_bpf_program_group("path_fdirty_dev") == WBG_BPF_PATHS, "group: path_ programs are the paths'");
	CHECK(wbg_bpf_program_group("expiry_folio") == WBG_BPF_DIRTIED,
	      "group: the expiry program loads with the dirtied group, which arming it asks for");
	CHECK(wbg_bpf_program_group("wbi") == WBG_BPF_DIRTIED, "group: a prefix's start is no prefix");
	CHECK(strcmp(wbg_bpf_group_name(WBG_BPF_LIFE), "cgroup removals") == 0, "group name: one group named");
	CHECK(strcmp(wbg_bpf_group_name(WBG_BPF_WBID | WBG_BPF_LIFE), "?") == 0,
	      "group name: two groups at once are none");
}

/* A link, or a ring, that these readers only compare with NULL */
static char opaque_;
#define LINKED ((struct bpf_link *)&opaque_)
#define RING_OPEN ((struct ring_buffer *)&opaque_)

static int count_attached(const char *name, bool attached, const char *why, void *userdata)
{
	unsigned *n = userdata;

	if (attached && !*why)
		n[0]++;
	else if (!attached && *why)
		n[1]++;
	return strcmp(name, "stop_here") == 0 ? -ECANCELED : 0;
}

static void test_programs(void)
{
	struct wbg_bpf b = { .n_progs = 3 };
	unsigned n[2] = { 0 };

	b.progs[0].name = "wbid_exit";
	b.progs[0].link = LINKED;
	b.progs[1].name = "wbid_lookup";
	snprintf(b.progs[1].why, sizeof(b.progs[1].why), "no_kernel_hook");
	b.progs[2].name = "path_fdirty";
	b.progs[2].link = LINKED;
	CHECK(wbg_bpf_attached(&b, "wbid_exit") == 1, "attached: a linked program is");
	CHECK(wbg_bpf_attached(&b, "wbid_lookup") == 0, "attached: one with a reason is not");
	CHECK(wbg_bpf_attached(&b, "nope") == -ENOENT, "attached: a program the object lacks is unknown");
	CHECK(wbg_bpf_foreach_program(&b, count_attached, n) == 0 && n[0] == 2 && n[1] == 1,
	      "each program once: attached ones without a reason, the other with its own");
	CHECK(wbg_bpf_foreach_program(NULL, count_attached, n) == 0, "no BPF at all: no program");
	b.progs[1].name = "stop_here";
	CHECK(wbg_bpf_foreach_program(&b, count_attached, n) == -ECANCELED, "the walk stops at its callback's error");
	b.progs[1].name = "wbid_lookup";

	/* the features on top of the programs: each needs its group loaded,
	 * the ring open and its programs attached */
	b.groups = WBG_BPF_WBID | WBG_BPF_LIFE | WBG_BPF_PATHS;
	CHECK(!wbg_bpf_dying_supported(&b), "evidence: not without the ring");
	CHECK(!wbg_bpf_stall_supported(&b), "stall: not without the ring");
	CHECK(wbg_bpf_ring_fd(&b) == -EBADF && wbg_bpf_ring_consume(&b) == 0, "ring: none open, nothing to poll");
	b.event_rb = RING_OPEN;
	CHECK(wbg_bpf_dying_supported(&b), "evidence: the ring and the foreign-dirtying program");
	CHECK(!wbg_bpf_stall_supported(&b), "stall: not while the -ENOENT lookup program is not attached");
	b.progs[1].link = LINKED;
	CHECK(wbg_bpf_stall_supported(&b), "stall: the ring and both flush-result programs");
	b.groups &= ~WBG_BPF_LIFE;
	CHECK(!wbg_bpf_dying_supported(&b) && !wbg_bpf_stall_supported(&b), "evidence, stall: not without the life group");
	b.event_rb = NULL;
	CHECK(wbg_bpf_ring_open(&b, on_event, NULL) == -EOPNOTSUPP, "ring: not opened without the life group");
	CHECK(wbg_bpf_expiry_arm(&b, 1) == -EOPNOTSUPP, "expiry: no arming without the dirtied group");
	CHECK(wbg_bpf_tenant_set(&b, 1, 2) == 0 && wbg_bpf_tenant_set(NULL, 1, 2) == 0,
	      "tenants: nothing to set without the dirtied group");
	CHECK(wbg_bpf_groups(NULL) == 0 && wbg_bpf_tenant_map_full(NULL) == 0, "no BPF: no groups, nothing counted");
}

int main(void)
{
	test_kinds();
	test_short();
	test_unknown_kind();
	test_path_unterminated();
	test_reader_result();
	test_groups();
	test_programs();
	return tap_done();
}
