/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The node_exporter textfile, written off the event loop: the text is made
 * on the loop (cheap), and one thread writes it to a temporary file, fsyncs
 * and renames it. On a stalled disk the thread waits, the loop does not
 * (the watchdog would kill wbguardd otherwise). Bounded: one text in hand at
 * a time; a newer one replaces a text not yet written (counted).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wbg_textfile;

int textfile_new(struct wbg_textfile **ret);
/* The same with another writer than write_file_atomic's (a test's stalled
 * disk). */
int textfile_new_with(int (*write)(const char *path, const char *text), struct wbg_textfile **ret);
/* ... and what the file is, for the failures' messages ("Cannot write the
 * WHAT PATH"), when it is not the metrics textfile. */
int textfile_new_named(const char *what, int (*write)(const char *path, const char *text), struct wbg_textfile **ret);
/* Hands over text (malloc'ed; freed here) to be written to path. */
void textfile_submit(struct wbg_textfile *t, const char *path, char *text);
/* Waits up to wait_usec for what is in hand to be written, then stops the
 * thread (or leaves it, still stuck in the kernel, detached). */
void textfile_free(struct wbg_textfile *t, uint64_t wait_usec);
/* counters */
uint64_t textfile_written(struct wbg_textfile *t);
uint64_t textfile_replaced(struct wbg_textfile *t);
uint64_t textfile_errors(struct wbg_textfile *t);
