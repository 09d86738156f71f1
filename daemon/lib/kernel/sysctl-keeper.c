/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "wbg-base.h"
#include "sysctl-keeper.h"

int sysctl_keeper_read(const struct wbg_sysctl *k, unsigned *ret)
{
	_cleanup_free_ char *text = NULL;
	uint64_t v;
	size_t n;
	int r = read_small_file_at(AT_FDCWD, k->path, 64, &text);

	if (r < 0)
		return r;
	n = strlen(text);
	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = 0;
	r = parse_u64_max(text, UINT32_MAX, &v);
	if (r < 0)
		return r;
	*ret = (unsigned)v;
	return 0;
}

/* O_TRUNC as the shell's '>' does, so a shorter number over a regular file
 * (a test's fixture) reads back right too; /proc/sys takes it the same way. */
static int write_sysctl(const char *path, unsigned v)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	char s[16];
	int n = snprintf(s, sizeof(s), "%u\n", v);

	if (fd < 0)
		return -errno;
	if (write(fd, s, n) != n)
		return errno ? -errno : -EIO;
	return 0;
}

static int write_value(struct wbg_sysctl *k, unsigned v)
{
	int r = write_sysctl(k->path, v);

	if (r < 0) {
		k->errors++;
		k->last_error = r;
		return log_error_errno(r, "Cannot write %s = %u (%s)%s", WBG_SYSCTL_NAME, v, k->path,
				       r == -EROFS || r == -EACCES || r == -EPERM ? ": /proc/sys is read-only here" : "");
	}
	return 0;
}

/* The state file: the original, what we are about to write, what the
 * sysctl held before that write (ours or the admin's), and who holds it.
 * Written to a temporary file, synced and renamed, so a crash leaves the
 * old or the new one whole; a crash between it and the write leaves the
 * sysctl at "previous", which the next start must accept as ours too. */
static int save_state(struct wbg_sysctl *k, unsigned written)
{
	struct json_object *o = json_object_new_object(), *h = json_object_new_array();
	char *text = NULL;
	int r;

	if (!o || !h) {
		json_object_put(o);
		json_object_put(h);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k->n_holders; i++) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "id", json_object_new_string(k->holders[i].id));
		json_object_object_add(e, "value", json_object_new_int64(k->holders[i].value));
		json_object_array_add(h, e);
	}
	json_object_object_add(o, "sysctl", json_object_new_string(WBG_SYSCTL_NAME));
	json_object_object_add(o, "original", json_object_new_int64(k->original));
	json_object_object_add(o, "written", json_object_new_int64(written));
	json_object_object_add(o, "previous", json_object_new_int64(k->lowered ? k->written : k->original));
	json_object_object_add(o, "pid", json_object_new_int64(getpid()));
	json_object_object_add(o, "holders", h);
	r = asprintf(&text, "%s\n",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) < 0
		    ? -ENOMEM
		    : write_file_atomic(k->state_path, text, true, 0644);
	free(text);
	json_object_put(o);
	if (r < 0) {
		k->errors++;
		k->last_error = r;
		return log_error_errno(r, "Cannot save %s's original value to %s; not changing it", WBG_SYSCTL_NAME,
				       k->state_path);
	}
	return 0;
}

static void drop_state(struct wbg_sysctl *k)
{
	if (unlink(k->state_path) < 0 && errno != ENOENT)
		log_warning_errno(errno, "Cannot remove %s", k->state_path);
}

void sysctl_keeper_init(struct wbg_sysctl *k, const char *proc_sys, const char *state_dir)
{
	*k = (struct wbg_sysctl){ 0 };
	snprintf(k->path, sizeof(k->path), "%s/vm/dirty_expire_centisecs", proc_sys);
	snprintf(k->state_path, sizeof(k->state_path), "%s/sysctl.json", state_dir);
}

int sysctl_keeper_open(struct wbg_sysctl *k, const char *proc_sys, const char *state_dir)
{
	_cleanup_free_ char *text = NULL;
	struct json_object *o, *v;
	unsigned cur;
	int r;

	sysctl_keeper_init(k, proc_sys, state_dir);
	r = sysctl_keeper_read(k, &cur);
	if (r < 0) {
		k->last_error = r;
		return log_error_errno(r, "Cannot read %s (%s)", WBG_SYSCTL_NAME, k->path);
	}
	k->original = cur;
	r = read_small_file_at(AT_FDCWD, k->state_path, 64 * 1024, &text);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return log_error_errno(r, "Cannot read %s", k->state_path);
	/* A previous run did not get to restore the value. */
	o = json_tokener_parse(text);
	if (!o || !json_object_object_get_ex(o, "original", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0 || json_object_get_int64(v) > UINT32_MAX) {
		json_object_put(o);
		log_warning("%s: not a state file wbguardd wrote (no valid \"original\"); leaving %s at %u and removing it",
			    k->state_path, WBG_SYSCTL_NAME, cur);
		drop_state(k);
		return 0;
	}
	k->original = (unsigned)json_object_get_int64(v);
	if ((json_object_object_get_ex(o, "written", &v) && json_object_get_int64(v) == (int64_t)cur) ||
	    (json_object_object_get_ex(o, "previous", &v) && json_object_get_int64(v) == (int64_t)cur)) {
		log_notice("%s is %u as a previous wbguardd left it; restoring the admin's %u (from %s)", WBG_SYSCTL_NAME,
			   cur, k->original, k->state_path);
		r = write_value(k, k->original);
		if (r < 0) {
			json_object_put(o);
			return r; /* keep the state file: the next start tries again */
		}
		k->recovered++;
		k->restores++;
	} else {
		log_notice("%s is %u, not what a previous wbguardd wrote: the admin's value, kept", WBG_SYSCTL_NAME, cur);
		k->original = cur;
		k->admin_changes++;
	}
	json_object_put(o);
	drop_state(k);
	return 0;
}

int sysctl_keeper_check(struct wbg_sysctl *k)
{
	unsigned cur;

	if (!k->lowered || sysctl_keeper_read(k, &cur) < 0 || cur == k->written)
		return 0;
	log_notice("%s changed to %u behind wbguardd's back (it had written %u): adopted as the admin's value",
		   WBG_SYSCTL_NAME, cur, k->written);
	k->original = cur;
	k->lowered = false;
	k->admin_changes++;
	drop_state(k);
	return 1;
}

static int apply(struct wbg_sysctl *k)
{
	unsigned want = k->original;
	int r;

	(void)sysctl_keeper_check(k);
	for (size_t i = 0; i < k->n_holders; i++)
		if (k->holders[i].value < want)
			want = k->holders[i].value;
	if (want == (k->lowered ? k->written : k->original))
		return 0;
	if (want < k->original) {
		/* the original on disk before the first change, and what we write */
		r = save_state(k, want);
		if (r < 0)
			return r;
		r = write_value(k, want);
		if (r < 0) {
			if (!k->lowered)
				drop_state(k);
			return r;
		}
		log_info("%s = %u (the admin's %u; %zu holder%s)", WBG_SYSCTL_NAME, want, k->original, k->n_holders,
			 k->n_holders == 1 ? "" : "s");
		k->written = want;
		k->lowered = true;
		k->changes++;
		return 0;
	}
	return sysctl_keeper_restore(k);
}

int sysctl_keeper_hold(struct wbg_sysctl *k, const char *id, unsigned value)
{
	size_t i;

	for (i = 0; i < k->n_holders; i++)
		if (strcmp(k->holders[i].id, id) == 0)
			break;
	if (i == k->n_holders) {
		if (k->n_holders >= WBG_SYSCTL_HOLDERS_MAX)
			return log_warning_errno(E2BIG, "Too many holders of %s; %s not added", WBG_SYSCTL_NAME, id);
		snprintf(k->holders[i].id, sizeof(k->holders[i].id), "%s", id);
		k->n_holders++;
	}
	k->holders[i].value = value;
	return apply(k);
}

int sysctl_keeper_release(struct wbg_sysctl *k, const char *id)
{
	for (size_t i = 0; i < k->n_holders; i++)
		if (strcmp(k->holders[i].id, id) == 0) {
			k->holders[i] = k->holders[--k->n_holders];
			return apply(k);
		}
	return 0;
}

int sysctl_keeper_restore(struct wbg_sysctl *k)
{
	int r;

	(void)sysctl_keeper_check(k);
	if (!k->lowered)
		return 0;
	r = write_value(k, k->original);
	if (r < 0)
		return r; /* the state file stays: the next start restores */
	log_info("%s = %u restored", WBG_SYSCTL_NAME, k->original);
	k->lowered = false;
	k->restores++;
	drop_state(k);
	return 0;
}
