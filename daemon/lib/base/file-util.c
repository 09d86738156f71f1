/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "file-util.h"
#include "macro.h"

int keyed_file_parse_u64(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			const char *v = p + klen + 1;
			char *end;
			unsigned long long x;

			if (*v < '0' || *v > '9')
				return -EINVAL;
			errno = 0;
			x = strtoull(v, &end, 10);
			if (errno || (*end != '\n' && *end != 0))
				return -EINVAL;
			*ret = x;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

int read_small_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	/* grown as the file needs, up to max: a bound, not what each read
	 * allocates (wb_stats may be allowed 64 MiB and hold a few KiB) */
	size_t cap = max < 65536 ? max : 65536, n = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t k;

		if (n == cap && cap < max) {
			size_t grown = cap > max / 2 ? max : cap * 2;
			char *b = realloc(buf, grown + 1);

			if (!b)
				return -ENOMEM;
			buf = b;
			cap = grown;
		}
		k = read(fd, buf + n, cap - n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		n += k;
		if (n == max)
			return -EFBIG;
	}
	buf[n] = 0;
	if (ret_len)
		*ret_len = n;
	*ret = TAKE_PTR(buf);
	return 0;
}

int read_small_file_at(int dirfd, const char *path, size_t max, char **ret)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return read_small_fd(fd, max, ret, NULL);
}

int write_string_file_at(int dirfd, const char *path, const char *s)
{
	_cleanup_close_ int fd = -EBADF;
	size_t len = strlen(s);
	ssize_t k;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	k = write(fd, s, len);
	if (k < 0)
		return -errno;
	return (size_t)k == len ? 0 : -EIO;
}

int write_file_atomic(const char *path, const char *s, bool sync, mode_t mode)
{
	char tmp[PATH_MAX];

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	return write_file_atomic_via(path, tmp, s, sync, mode);
}

int write_file_atomic_via(const char *path, const char *tmp, const char *s, bool sync, mode_t mode)
{
	size_t n = strlen(s);
	int fd, r = 0;

	/* a new file, never one that is there: a temporary a crash left is
	 * removed first, and a symlink put in its place (the state
	 * directory may be a hostPath) is removed, not written through */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	/* the mode asked for, whatever the umask */
	if (fchmod(fd, mode) < 0 || write(fd, s, n) != (ssize_t)n || (sync && fsync(fd) < 0))
		r = errno ? -errno : -EIO;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		(void)unlink(tmp);
	return r;
}

int kallsyms_has(const char *path, const char *symbol)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[512];
	size_t n = strlen(symbol);

	if (!f)
		return -errno;
	/* "ffffffff81234560 T name [module]" */
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, ' ');

		if (name)
			name = strchr(name + 1, ' ');
		if (name && strncmp(name + 1, symbol, n) == 0 && (name[1 + n] == '\n' || name[1 + n] == ' ' ||
								   name[1 + n] == '\t' || name[1 + n] == 0))
			return 1;
	}
	return 0;
}
