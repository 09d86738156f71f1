/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A thread running an sd-event loop of its own, for a server whose peers
 * must never hold the daemon's loop: its accepts, TLS handshakes, slow
 * clients and reconnect storms cost that thread, not a handover. sd-event
 * is not thread-safe: the daemon's loop reaches this one only through
 * loop_thread_call(), which runs a function there and waits for it.
 * All signals are blocked in the thread (the daemon's loop takes them).
 */
#pragma once

#include <systemd/sd-event.h>

struct wbg_loop_thread;

/* Starts the thread; setup(event, arg) runs first on its loop, and its
 * result is returned (a negative one stops the thread: nothing started). */
int loop_thread_start(int (*setup)(sd_event *event, void *arg), void *arg, struct wbg_loop_thread **ret);
/* Runs fn(arg) on the thread's loop, between its events, and returns its
 * result. */
int loop_thread_call(struct wbg_loop_thread *t, int (*fn)(void *arg), void *arg);
/* Runs teardown(arg) there (NULL: none), ends the loop, joins the thread,
 * frees it. NULL is a no-op. */
struct wbg_loop_thread *loop_thread_stop(struct wbg_loop_thread *t, void (*teardown)(void *arg), void *arg);
