/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "wbg-base.h"
#include "scrape-feed.h"

static void poke(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

static void drain(int fd)
{
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
}

/* The loop: one render for every scrape that asked before it began. */
static void render(struct wbg_scrape_feed *s)
{
	char *buf = NULL;
	size_t n = 0;
	uint64_t seq;
	FILE *f;

	pthread_mutex_lock(&s->lock);
	seq = s->asked;
	pthread_mutex_unlock(&s->lock);
	if (seq == s->covered)
		return; /* nobody asked since: covered is only ours to write */
	f = open_memstream(&buf, &n);
	if (!f) {
		log_warning("Cannot render the exposition for a scrape: out of memory");
		return;
	}
	s->write(f, s->userdata);
	if (fclose(f) != 0) {
		free(buf);
		log_warning("Cannot render the exposition for a scrape: out of memory");
		return;
	}
	(void)sd_event_now(s->event, CLOCK_MONOTONIC, &s->last_render_usec);
	pthread_mutex_lock(&s->lock);
	free(s->body);
	s->body = buf;
	s->size = n;
	s->covered = seq;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->renders, 1);
	poke(s->ready_fd);
}

static int on_later(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct wbg_scrape_feed *s = userdata;

	s->later_source = sd_event_source_disable_unref(s->later_source);
	render(s);
	return 0;
}

static int on_ask(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct wbg_scrape_feed *s = userdata;
	uint64_t now = 0;

	drain(fd);
	if (s->later_source)
		return 0; /* a render is due: it covers this one */
	(void)sd_event_now(s->event, CLOCK_MONOTONIC, &now);
	if (s->last_render_usec && now < s->last_render_usec + WBG_RENDER_MIN_USEC) {
		if (sd_event_add_time(s->event, &s->later_source, CLOCK_MONOTONIC,
				      s->last_render_usec + WBG_RENDER_MIN_USEC, 0, on_later, s) >= 0)
			return 0;
		log_warning("Cannot defer a render: rendering now");
	}
	render(s);
	return 0;
}

static int on_ready(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct wbg_scrape_feed *s = userdata;

	drain(fd);
	s->rendered(s->rendered_userdata);
	return 0;
}

int scrape_feed_start(struct wbg_scrape_feed *s, sd_event *event, void (*write)(FILE *f, void *userdata),
		      void *userdata)
{
	int r;

	*s = (struct wbg_scrape_feed){ .event = event, .write = write, .userdata = userdata, .ask_fd = -1,
				       .ready_fd = -1 };
	pthread_mutex_init(&s->lock, NULL);
	s->ask_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->ask_fd < 0 || s->ready_fd < 0)
		return -errno;
	r = sd_event_add_io(event, &s->ask_source, s->ask_fd, EPOLLIN, on_ask, s);
	if (r < 0)
		return r;
	return 0;
}

int scrape_feed_attach(struct wbg_scrape_feed *s, sd_event *thread_event, void (*rendered)(void *userdata),
		       void *userdata)
{
	s->rendered = rendered;
	s->rendered_userdata = userdata;
	return sd_event_add_io(thread_event, &s->ready_source, s->ready_fd, EPOLLIN, on_ready, s);
}

void scrape_feed_detach(struct wbg_scrape_feed *s)
{
	s->ready_source = sd_event_source_disable_unref(s->ready_source);
}

void scrape_feed_stop(struct wbg_scrape_feed *s)
{
	if (!s->event)
		return; /* never started */
	s->ask_source = sd_event_source_disable_unref(s->ask_source);
	s->later_source = sd_event_source_disable_unref(s->later_source);
	if (s->ask_fd >= 0)
		close(s->ask_fd);
	if (s->ready_fd >= 0)
		close(s->ready_fd);
	s->ask_fd = s->ready_fd = -1;
	free(s->body);
	s->body = NULL;
	pthread_mutex_destroy(&s->lock);
	s->event = NULL;
}

uint64_t scrape_feed_ask(struct wbg_scrape_feed *s)
{
	uint64_t seq;

	pthread_mutex_lock(&s->lock);
	seq = ++s->asked;
	pthread_mutex_unlock(&s->lock);
	poke(s->ask_fd);
	return seq;
}

int scrape_feed_take(struct wbg_scrape_feed *s, uint64_t seq, char **ret_body, size_t *ret_size)
{
	char *copy = NULL;
	size_t n = 0;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	if (s->covered >= seq) {
		n = s->size;
		copy = malloc(n ? n : 1);
		if (copy) {
			memcpy(copy, s->body, n);
			r = 1;
		} else
			r = -ENOMEM;
	}
	pthread_mutex_unlock(&s->lock);
	if (r > 0) {
		*ret_body = copy;
		*ret_size = n;
	}
	return r;
}
