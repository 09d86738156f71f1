/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The small set of helpers every file uses: cleanup attributes and sizes. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

/* Order of uint64_t ids, and of structs whose first member is their id
 * (tsearch, qsort, bsearch). */
static inline int cmp_leading_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define _unused_ __attribute__((unused))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Hand a cleanup-owned value to the caller. */
#define TAKE_PTR(p)                          \
	({                                   \
		__typeof__(p) _p_ = (p);     \
		(p) = NULL;                  \
		_p_;                         \
	})
#define TAKE_FD(fd)                    \
	({                             \
		int _fd_ = (fd);       \
		(fd) = -EBADF;         \
		_fd_;                  \
	})

/* Appends item to the intrusive singly linked list *head .. *tail, linked
 * through item->next_field. */
#define LIST_APPEND(head, tail, item, next_field)      \
	do {                                           \
		(item)->next_field = NULL;             \
		if (*(tail))                           \
			(*(tail))->next_field = (item); \
		else                                   \
			*(head) = (item);              \
		*(tail) = (item);                      \
	} while (0)
