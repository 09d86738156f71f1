/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The hook's fallback budget: one syncfs of a filesystem a second across
 * processes; other filesystems their own; a full table makes room only
 * once its oldest slot's second is over; overlays keyed by their disk; a lock
 * held past the deadline, or a file that is not ours, means no flush. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <sys/sysmacros.h>

#include "hook-budget.h"
#include "wbg-kernel.h"
#include "tap.h"

#define S (1000ULL * 1000)

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int main(void)
{
	char dir[] = "/tmp/wbg-budget.XXXXXX", path[256];
	struct hook_budget_counts c = { 0 };
	uint64_t t = 1000 * S, far = mono() + 5 * S;
	int taken = 0, st;
	pid_t pid;

	if (!mkdtemp(dir))
		return 1;
	CHECK(hook_budget_counts(dir, &c) == -ENOENT, "no fallback yet: no counts");
	CHECK(hook_budget_take(dir, 0x801, t, S, far) == 1, "the first syncfs of a filesystem: taken");
	CHECK(hook_budget_take(dir, 0x801, t + S / 2, S, far) == 0, "the same filesystem half a second later: refused");
	CHECK(hook_budget_take(dir, 0x802, t + S / 2, S, far) == 1, "another filesystem: its own");
	CHECK(hook_budget_take(dir, 0x801, t + S + 1, S, far) == 1, "a second later: taken again");
	pid = fork();
	if (pid == 0)
		_exit(hook_budget_take(dir, 0x801, t + S + 2, S, far) == 0 ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "another process (the next exit's hook) is refused too");
	for (unsigned d = 0; d < HOOK_BUDGET_SLOTS + 8; d++)
		taken += hook_budget_take(dir, 0x1000 + d, t + 2 * S + d, S, far) == 1;
	CHECK(taken == HOOK_BUDGET_SLOTS,
	      "more filesystems than slots within a second: the slots taken (two flushed over a second ago making "
	      "room), the 8 past them refused (%d taken)", taken);
	CHECK(hook_budget_take(dir, 0x801, t + 2 * S + 100, S, far) == 0,
	      "... and one more: no slot flushed over a second ago to make room for it");
	CHECK(hook_budget_counts(dir, &c) == 0 && c.full == 9, "... each counted as the table full (%llu)",
	      (unsigned long long)c.full);
	CHECK(hook_budget_take(dir, 0x2000, t + 4 * S, S, far) == 1, "a second later: the oldest makes room");
	CHECK(hook_budget_counts(dir, &c) == 0 && c.taken == 3 + HOOK_BUDGET_SLOTS + 1 && c.refused == 2,
	      "counted: %llu taken, %llu refused", (unsigned long long)c.taken, (unsigned long long)c.refused);
	{
		/* three containers' rootfs overlays, each a device of its own,
		 * over one disk: one filesystem to the budget */
		char up[3][64], text[1024];
		struct wbg_mounts m;
		dev_t key[3];
		size_t len = 0;
		int got = 0;

		for (int i = 0; i < 3; i++) {
			snprintf(up[i], sizeof(up[i]), "%s/upper%d", dir, i);
			(void)mkdir(up[i], 0755);
			len += (size_t)snprintf(text + len, sizeof(text) - len,
						"%d 22 0:%d / /run/c/%d/rootfs rw - overlay overlay rw,lowerdir=/l,upperdir=%s,workdir=/w\n",
						50 + i, 201 + i, i, up[i]);
		}
		CHECK(mountinfo_parse(text, &m) == 0 && m.n == 3, "three overlays' mount lines");
		for (int i = 0; i < 3; i++)
			got += mountinfo_overlay_upper_dev(&m, makedev(0, 201 + i), &key[i]) == 0;
		CHECK(got == 3 && key[0] == key[1] && key[1] == key[2], "three overlays on one disk: one key, the disk's");
		got = 0;
		for (int i = 0; i < 3; i++)
			got += hook_budget_take(dir, key[i], t + 10 * S + i, S, far) == 1;
		CHECK(got == 1, "three overlays' exits within a second: one syncfs of their disk (%d)", got);
		mountinfo_free(&m);
		for (int i = 0; i < 3; i++)
			rmdir(up[i]);
	}
	{
		/* a holder that never lets go: refused by the deadline */
		struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd;
		uint64_t t0;

		snprintf(path, sizeof(path), "%s/%s", dir, HOOK_BUDGET_FILE);
		fd = open(path, O_RDWR | O_CLOEXEC);
		CHECK(fd >= 0 && fcntl(fd, F_OFD_SETLK, &lk) == 0, "a holder takes the lock");
		t0 = mono();
		CHECK(hook_budget_take(dir, 0x901, t + 10 * S, S, mono() + 50 * 1000) == -ETIMEDOUT &&
			      mono() - t0 < 500 * 1000,
		      "its lock not had by the deadline: -ETIMEDOUT in %llu ms, no flush",
		      (unsigned long long)((mono() - t0) / 1000));
		close(fd);
	}
	unlink(path);
	CHECK(symlink("/etc/passwd", path) == 0 && hook_budget_take(dir, 0x901, t, S, far) < 0,
	      "a symlink in its place: not followed, no flush");
	unlink(path);
	{
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);

		CHECK(fd >= 0 && fchmod(fd, 0666) == 0 && hook_budget_take(dir, 0x901, t, S, far) == -EPERM,
		      "a file others may write: not ours, no flush");
		if (fd >= 0)
			close(fd);
	}
	unlink(path);
	{
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

		CHECK(fd >= 0 && write(fd, "garbage", 7) == 7 && hook_budget_take(dir, 0x901, t, S, far) == 1,
		      "a file of garbage: started anew");
		if (fd >= 0)
			close(fd);
	}
	unlink(path);
	rmdir(dir);
	return tap_done();
}
