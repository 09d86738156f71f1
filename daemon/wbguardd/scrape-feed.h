/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The exposition, rendered on the daemon's event loop for scrapes that the
 * metrics server's thread answers. A scrape asks (and gets a number); the
 * loop renders once for every scrape that asked before it began, at most
 * once every WBG_RENDER_MIN_USEC, and tells the thread, which hands each
 * waiting scrape its copy. So a render is never older than the request it
 * answers, and however many scrapes peers send, the loop renders at most
 * ten times a second.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#define WBG_RENDER_MIN_USEC (100ULL * 1000)

struct wbg_scrape_feed {
	/* the loop's: asked through ask_fd, renders with write */
	sd_event *event;
	sd_event_source *ask_source, *later_source;
	int ask_fd;
	void (*write)(FILE *f, void *userdata);
	void *userdata;
	uint64_t last_render_usec;
	/* the server thread's: told through ready_fd */
	sd_event_source *ready_source;
	int ready_fd;
	void (*rendered)(void *userdata);
	void *rendered_userdata;
	/* both, under lock */
	pthread_mutex_t lock;
	uint64_t asked;   /* scrapes that asked so far: numbered 1, 2, ... */
	uint64_t covered; /* the body answers the scrapes numbered up to this */
	char *body;
	size_t size;
	_Atomic uint64_t renders;
};

/* The loop's side, on event: write(f, userdata) renders. */
int scrape_feed_start(struct wbg_scrape_feed *s, sd_event *event, void (*write)(FILE *f, void *userdata),
		      void *userdata);
/* The thread's side, on its own loop: rendered(userdata) runs there once a
 * render is ready. */
int scrape_feed_attach(struct wbg_scrape_feed *s, sd_event *thread_event, void (*rendered)(void *userdata),
		       void *userdata);
/* The thread's: its sources go (the thread's loop is about to end). */
void scrape_feed_detach(struct wbg_scrape_feed *s);
/* After the thread is gone: the loop's sources and the last body. */
void scrape_feed_stop(struct wbg_scrape_feed *s);
/* The thread's: a scrape asks; its number. */
uint64_t scrape_feed_ask(struct wbg_scrape_feed *s);
/* The thread's: a copy of the body for scrape number seq, if a render
 * since it asked is there (1), else 0; -ENOMEM. */
int scrape_feed_take(struct wbg_scrape_feed *s, uint64_t seq, char **ret_body, size_t *ret_size);
