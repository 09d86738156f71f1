/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "wbg-base.h"
#include "blockdev.h"
#include "mountinfo.h"

/* The kernel escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 3 < n + 1 && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			*o++ = (char)((s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0'));
			i += 3;
		} else
			*o++ = s[i];
	}
	*o = 0;
	return out;
}

static void mount_free(struct wbg_mount *m)
{
	free(m->root);
	free(m->target);
	free(m->fstype);
	free(m->source);
	free(m->upper);
}

/* An overlay's upperdir=, from its super options (values escaped as the
 * kernel's seq_show_option escapes them: a comma never appears bare). */
static int overlay_upper(const char *opts, size_t len, char **ret)
{
	for (size_t i = 0; i < len;) {
		size_t n = 0;

		while (i + n < len && opts[i + n] != ',')
			n++;
		if (n > 9 && memcmp(opts + i, "upperdir=", 9) == 0) {
			*ret = unescape(opts + i + 9, n - 9);
			return *ret ? 0 : -ENOMEM;
		}
		i += n + 1;
	}
	return 0;
}

/* One line: ID PARENT MAJ:MIN ROOT TARGET OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
static int parse_line(const char *line, size_t len, struct wbg_mount *ret)
{
	const char *f[16];
	size_t fl[16], nf = 0, i = 0, dash = 0;
	unsigned maj, min;
	struct wbg_mount m = { 0 };

	while (i < len && nf < ELEMENTSOF(f)) {
		while (i < len && line[i] == ' ')
			i++;
		if (i >= len)
			break;
		f[nf] = line + i;
		while (i < len && line[i] != ' ')
			i++;
		fl[nf] = (size_t)(line + i - f[nf]);
		if (fl[nf] == 1 && f[nf][0] == '-' && nf >= 6 && !dash)
			dash = nf;
		nf++;
	}
	if (!dash || nf < dash + 3)
		return -EINVAL;
	if (sscanf(f[2], "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	m.dev = m.bdi = makedev(maj, min);
	m.root = unescape(f[3], fl[3]);
	m.target = unescape(f[4], fl[4]);
	m.fstype = unescape(f[dash + 1], fl[dash + 1]);
	m.source = unescape(f[dash + 2], fl[dash + 2]);
	if (m.fstype && strcmp(m.fstype, "overlay") == 0 && nf > dash + 3 &&
	    overlay_upper(f[dash + 3], fl[dash + 3], &m.upper) < 0) {
		free(m.root);
		m.root = NULL; /* -ENOMEM below */
	}
	if (!m.root || !m.target || !m.fstype || !m.source) {
		mount_free(&m);
		return -ENOMEM;
	}
	*ret = m;
	return 0;
}

int mountinfo_parse(const char *text, struct wbg_mounts *ret)
{
	struct wbg_mounts m = { 0 };
	size_t cap = 0;

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct wbg_mount one;

		if (len > 0 && parse_line(p, len, &one) == 0) {
			if (m.n == cap) {
				struct wbg_mount *v = realloc(m.v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

				if (!v) {
					mount_free(&one);
					mountinfo_free(&m);
					return -ENOMEM;
				}
				m.v = v;
			}
			m.v[m.n++] = one;
		}
		p = nl ? nl + 1 : NULL;
	}
	*ret = m;
	return 0;
}

int mountinfo_read(const char *path, struct wbg_mounts *ret)
{
	_cleanup_free_ char *text = NULL;
	int r = read_small_file_at(AT_FDCWD, path, 16 << 20, &text);

	return r < 0 ? r : mountinfo_parse(text, ret);
}

void mountinfo_free(struct wbg_mounts *m)
{
	for (size_t i = 0; i < m->n; i++)
		mount_free(&m->v[i]);
	free(m->v);
	*m = (struct wbg_mounts){ 0 };
}

int mountinfo_dir_fstype(const char *mountinfo, const char *dir, char *ret, size_t size)
{
	struct wbg_mounts m;
	const struct wbg_mount *f;
	struct stat st;
	int r;

	if (stat(dir, &st) < 0)
		return -errno;
	r = mountinfo_read(mountinfo, &m);
	if (r < 0)
		return r;
	f = mountinfo_find_dev(&m, st.st_dev);
	snprintf(ret, size, "%s", f ? f->fstype : "");
	mountinfo_free(&m);
	return 0;
}

unsigned mountinfo_resolve_bdis(struct wbg_mounts *m, const char *sysfs_dev_block)
{
	/* block devices resolved so far: a node has few, however many bind
	 * mounts and container mounts (anonymous devices) it has */
	struct {
		dev_t dev, bdi;
	} seen[64];
	size_t n_seen = 0;
	unsigned failed = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct wbg_mount *e = &m->v[i];
		size_t k = 0;

		e->bdi = e->dev;
		if (major(e->dev) == 0)
			continue; /* anonymous: its own name */
		while (k < n_seen && seen[k].dev != e->dev)
			k++;
		if (k < n_seen) {
			e->bdi = seen[k].bdi;
			continue;
		}
		if (blockdev_bdi(sysfs_dev_block, e->dev, &e->bdi) < 0) {
			e->bdi = e->dev;
			failed++;
		}
		if (n_seen < ELEMENTSOF(seen))
			seen[n_seen++] = (typeof(seen[0])){ e->dev, e->bdi };
	}
	return failed;
}

const struct wbg_mount *mountinfo_find_dev(const struct wbg_mounts *m, dev_t dev)
{
	const struct wbg_mount *any = NULL;

	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].dev != dev)
			continue;
		if (strcmp(m->v[i].root, "/") == 0)
			return &m->v[i];
		if (!any)
			any = &m->v[i];
	}
	return any;
}

int mountinfo_prefix(struct wbg_mounts *m, const char *prefix)
{
	if (!prefix || !*prefix)
		return 0;
	for (size_t i = 0; i < m->n; i++) {
		char *t;

		if (asprintf(&t, "%s%s", prefix, strcmp(m->v[i].target, "/") == 0 ? "" : m->v[i].target) < 0)
			return -ENOMEM;
		free(m->v[i].target);
		m->v[i].target = t;
	}
	return 0;
}

int mountinfo_overlay_upper_dev(const struct wbg_mounts *m, dev_t dev, dev_t *ret)
{
	struct stat st;

	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].dev != dev || !m->v[i].upper)
			continue;
		if (stat(m->v[i].upper, &st) < 0)
			return -errno;
		*ret = st.st_dev;
		return 0;
	}
	return -ENOENT;
}
