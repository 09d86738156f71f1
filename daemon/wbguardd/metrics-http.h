/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /metrics over HTTP (libmicrohttpd without threads of its own: its epoll fd
 * is a source on our loop, so a scrape reads counters with no locking). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

struct manager;

int metrics_http_start(struct manager *m);
void metrics_http_stop(struct manager *m);
/* The whole exposition, as a scrape sees it. */
void metrics_write(const struct manager *m, FILE *f);
/* Its kernel part, from the BPF counters (metrics-kernel.c). */
void metrics_write_kernel(FILE *f, const struct manager *m);
/* The configured textfile, rewritten atomically; force ignores the throttle. */
void metrics_textfile_update(struct manager *m, bool force);
