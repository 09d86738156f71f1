/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wbg-base.h"
#include "textfile.h"

struct wbg_textfile {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *path, *text; /* in hand, not yet taken by the thread */
	bool busy, stop;
	bool orphaned; /* textfile_free gave up on it: the thread frees it when back */
	const char *what; /* static: "metrics textfile", ... */
	int (*write)(const char *path, const char *text);
	uint64_t written, replaced, errors;
};

static void destroy(struct wbg_textfile *t)
{
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	free(t->path);
	free(t->text);
	free(t);
}

static void *run(void *arg)
{
	struct wbg_textfile *t = arg;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		char *path, *text;
		int r;

		while (!t->text && !t->stop)
			pthread_cond_wait(&t->cond, &t->lock);
		if (!t->text || t->stop)
			break;
		path = t->path, text = t->text;
		t->path = t->text = NULL;
		t->busy = true;
		pthread_mutex_unlock(&t->lock);
		r = t->write(path, text);
		if (r < 0)
			log_warning_errno(r, "Cannot write the %s %s", t->what, path);
		free(path);
		free(text);
		pthread_mutex_lock(&t->lock);
		t->busy = false;
		if (r < 0)
			t->errors++;
		else
			t->written++;
		pthread_cond_broadcast(&t->cond);
	}
	if (t->orphaned) {
		pthread_mutex_unlock(&t->lock);
		destroy(t);
		return NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static int write_atomic(const char *path, const char *text)
{
	return write_file_atomic(path, text, true, 0644);
}

int textfile_new(struct wbg_textfile **ret)
{
	return textfile_new_with(write_atomic, ret);
}

int textfile_new_with(int (*write)(const char *path, const char *text), struct wbg_textfile **ret)
{
	return textfile_new_named("metrics textfile", write, ret);
}

int textfile_new_named(const char *what, int (*write)(const char *path, const char *text), struct wbg_textfile **ret)
{
	struct wbg_textfile *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->write = write;
	t->what = what;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	r = pthread_create(&t->thread, NULL, run, t);
	if (r != 0) {
		free(t);
		return -r;
	}
	*ret = t;
	return 0;
}

void textfile_submit(struct wbg_textfile *t, const char *path, char *text)
{
	char *p = strdup(path);

	if (!p) {
		free(text);
		return;
	}
	pthread_mutex_lock(&t->lock);
	if (t->text)
		t->replaced++; /* the disk is slower than our updates: the newest wins */
	free(t->path);
	free(t->text);
	t->path = p;
	t->text = text;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

void textfile_free(struct wbg_textfile *t, uint64_t wait_usec)
{
	struct timespec until;
	const char *what;
	pthread_t thread;
	bool done;

	if (!t)
		return;
	/* once orphaned, t is the thread's to free: nothing of it is read
	 * after the unlock */
	what = t->what;
	thread = t->thread;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(wait_usec / 1000000);
	until.tv_nsec += (long)(wait_usec % 1000000) * 1000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&t->lock);
	while ((t->text || t->busy) && pthread_cond_timedwait(&t->cond, &t->lock, &until) == 0)
		;
	done = !t->text && !t->busy;
	t->stop = true;
	t->orphaned = !done;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (!done) {
		/* stuck in the kernel on a stalled disk: we exit without it,
		 * and it frees t if it ever comes back */
		log_warning("The %s is still being written; not waiting for it", what);
		pthread_detach(thread);
		return;
	}
	pthread_join(thread, NULL);
	destroy(t);
}

static uint64_t get(struct wbg_textfile *t, const uint64_t *v)
{
	uint64_t x;

	pthread_mutex_lock(&t->lock);
	x = *v;
	pthread_mutex_unlock(&t->lock);
	return x;
}

uint64_t textfile_written(struct wbg_textfile *t)
{
	return t ? get(t, &t->written) : 0;
}

uint64_t textfile_replaced(struct wbg_textfile *t)
{
	return t ? get(t, &t->replaced) : 0;
}

uint64_t textfile_errors(struct wbg_textfile *t)
{
	return t ? get(t, &t->errors) : 0;
}
