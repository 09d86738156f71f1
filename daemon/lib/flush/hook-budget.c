/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hook-budget.h"
#include "wbg-base.h"

struct budget_file {
	uint32_t magic, slots;
	struct hook_budget_counts counts;
	struct {
		uint64_t dev, last_usec;
	} slot[HOOK_BUDGET_SLOTS];
};

#define BUDGET_MAGIC 0x77626732 /* "wbg2": counts gained full */

static uint64_t mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Ours: a regular file of root's (or our user's), no link, no one else
 * writing it. */
static int open_budget(const char *dir, int flags)
{
	char path[4096];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, HOOK_BUDGET_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int hook_budget_take(const char *dir, dev_t dev, uint64_t now, uint64_t interval, uint64_t lock_deadline)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct budget_file b = { 0 };
	_cleanup_close_ int fd = -EBADF;
	size_t i, oldest = 0;
	ssize_t n;
	int r;

	(void)mkdir(dir, 0755);
	fd = open_budget(dir, O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	/* non-blocking tries until the deadline: a stuck holder costs us
	 * the deadline, never more */
	while (fcntl(fd, F_OFD_SETLK, &lk) < 0) {
		if (errno != EAGAIN && errno != EACCES && errno != EINTR)
			return -errno;
		if (mono_usec() >= lock_deadline)
			return -ETIMEDOUT;
		usleep(2000);
	}
	n = pread(fd, &b, sizeof(b), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(b) || b.magic != BUDGET_MAGIC || b.slots != HOOK_BUDGET_SLOTS)
		b = (struct budget_file){ .magic = BUDGET_MAGIC, .slots = HOOK_BUDGET_SLOTS }; /* new, or not ours: anew */
	for (i = 0; i < HOOK_BUDGET_SLOTS; i++) {
		if (b.slot[i].dev == (uint64_t)dev && b.slot[i].last_usec)
			break;
		if (b.slot[i].last_usec < b.slot[oldest].last_usec)
			oldest = i;
	}
	/* a last time in the future: a clock from before this boot's file */
	if (i < HOOK_BUDGET_SLOTS && b.slot[i].last_usec <= now && now - b.slot[i].last_usec < interval) {
		b.counts.refused++;
		r = 0;
	} else if (i == HOOK_BUDGET_SLOTS && b.slot[oldest].last_usec <= now &&
		   now - b.slot[oldest].last_usec < interval) {
		/* every slot flushed within the interval: making room would
		 * forget a filesystem's last flush, and new devices (a
		 * tenant's mounts) could then buy the node's disk a syncfs
		 * each */
		b.counts.full++;
		r = 0;
	} else {
		if (i == HOOK_BUDGET_SLOTS)
			i = oldest;
		b.slot[i].dev = dev;
		b.slot[i].last_usec = now;
		b.counts.taken++;
		r = 1;
	}
	if (pwrite(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO; /* refused or not, nothing noted: no flush */
	return r; /* the lock goes with the fd */
}

int hook_budget_counts(const char *dir, struct hook_budget_counts *ret)
{
	struct budget_file b;
	_cleanup_close_ int fd = open_budget(dir, O_RDONLY);

	if (fd < 0)
		return fd;
	if (pread(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b) || b.magic != BUDGET_MAGIC)
		return -EBADMSG;
	*ret = b.counts;
	return 0;
}
