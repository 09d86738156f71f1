/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "wbg-base.h"
#include "loop-thread.h"

struct wbg_loop_thread {
	pthread_t thread;
	sd_event *event;
	int efd;
	/* one call at a time: callers take call_lock, then wait on done */
	pthread_mutex_t call_lock, lock;
	pthread_cond_t done;
	int (*fn)(void *arg);
	void *arg;
	int result;
	bool pending, exit;
	/* start */
	int (*setup)(sd_event *event, void *arg);
};

static int on_call(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct wbg_loop_thread *t = userdata;
	uint64_t v;

	(void)!read(t->efd, &v, sizeof(v));
	pthread_mutex_lock(&t->lock);
	if (t->pending) {
		t->result = t->fn ? t->fn(t->arg) : 0;
		t->pending = false;
		if (t->exit)
			(void)sd_event_exit(t->event, 0);
		pthread_cond_broadcast(&t->done);
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* The thread: its loop made, setup run and its result handed to the
 * starter (waiting on done), then the loop until a stop's call ends it. */
static void *run(void *userdata)
{
	struct wbg_loop_thread *t = userdata;
	sd_event_source *call = NULL;
	sigset_t all;
	int r;

	sigfillset(&all);
	(void)pthread_sigmask(SIG_BLOCK, &all, NULL);
	r = sd_event_new(&t->event);
	if (r >= 0)
		r = sd_event_add_io(t->event, &call, t->efd, EPOLLIN, on_call, t);
	if (r >= 0)
		r = t->setup(t->event, t->arg);
	pthread_mutex_lock(&t->lock);
	t->result = r;
	t->pending = false;
	pthread_cond_broadcast(&t->done);
	pthread_mutex_unlock(&t->lock);
	if (r >= 0 && (r = sd_event_loop(t->event)) < 0)
		log_error_errno(r, "A server's own event loop failed");
	sd_event_source_disable_unref(call);
	t->event = sd_event_unref(t->event);
	return NULL;
}

static void loop_thread_free(struct wbg_loop_thread *t)
{
	if (t->efd >= 0)
		close(t->efd);
	pthread_cond_destroy(&t->done);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->call_lock);
	free(t);
}

int loop_thread_start(int (*setup)(sd_event *event, void *arg), void *arg, struct wbg_loop_thread **ret)
{
	struct wbg_loop_thread *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->call_lock, NULL);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->done, NULL);
	t->setup = setup;
	t->arg = arg;
	t->pending = true;
	t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->efd < 0) {
		r = -errno;
		loop_thread_free(t);
		return r;
	}
	r = -pthread_create(&t->thread, NULL, run, t);
	if (r < 0) {
		loop_thread_free(t);
		return r;
	}
	pthread_mutex_lock(&t->lock);
	while (t->pending)
		pthread_cond_wait(&t->done, &t->lock);
	r = t->result;
	pthread_mutex_unlock(&t->lock);
	if (r < 0) {
		pthread_join(t->thread, NULL);
		loop_thread_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static int call(struct wbg_loop_thread *t, int (*fn)(void *arg), void *arg, bool exit)
{
	uint64_t one = 1;
	int r;

	pthread_mutex_lock(&t->call_lock);
	pthread_mutex_lock(&t->lock);
	t->fn = fn;
	t->arg = arg;
	t->exit = exit;
	t->pending = true;
	pthread_mutex_unlock(&t->lock);
	(void)!write(t->efd, &one, sizeof(one));
	pthread_mutex_lock(&t->lock);
	while (t->pending)
		pthread_cond_wait(&t->done, &t->lock);
	r = t->result;
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&t->call_lock);
	return r;
}

int loop_thread_call(struct wbg_loop_thread *t, int (*fn)(void *arg), void *arg)
{
	return call(t, fn, arg, false);
}

struct teardown {
	void (*fn)(void *arg);
	void *arg;
};

static int run_teardown(void *arg)
{
	struct teardown *d = arg;

	if (d->fn)
		d->fn(d->arg);
	return 0;
}

struct wbg_loop_thread *loop_thread_stop(struct wbg_loop_thread *t, void (*teardown)(void *arg), void *arg)
{
	struct teardown d = { teardown, arg };

	if (!t)
		return NULL;
	(void)call(t, run_teardown, &d, true);
	pthread_join(t->thread, NULL);
	loop_thread_free(t);
	return NULL;
}
