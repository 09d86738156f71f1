/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NRI plugin's state, shared by its connection (nri-plugin.c) and its
 * requests' handlers (nri-requests.c); nothing outside the plugin sees it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "nri-plugin.h"
#include "nri-pods-internal.h"
#include "nri-wire.h"

/* google.rpc.Code */
#define RPC_UNIMPLEMENTED 12
/* wbguardd's one call of the runtime's service: the first odd stream */
#define REGISTER_STREAM 1
/* reads per readiness: a runtime's burst does not hold the loop */
#define READS_PER_IO 16

enum pending { PENDING_NONE, PENDING_BROKEN, PENDING_SHUTDOWN };

struct wbg_nri {
	const struct wbg_nri_ops *ops;
	void *userdata;
	char plugin_name[64], plugin_index[8];
	enum nri_phase phase;
	int fd;
	struct nri_wire wire;
	struct nri_out out;
	struct nri_pods pods;
	uint64_t deadline, backoff_usec;
	bool registered, connect_failing;
	char runtime[160];
	unsigned sync_pods, sync_containers;
	/* set while a message is handled, carried out once the feed stops:
	 * closing frees the buffers the feed reads */
	enum pending pending;
	enum wbg_nri_error pending_error;
	char why[200];
	struct wbg_nri_stats stats;
};


/* The one place the phase changes: the table's step, its actions carried
 * out, and the facts they produce stepped in turn. */
void nri_step_event(struct wbg_nri *n, enum nri_event ev);
/* Stops the feed with a closing event carried out after it: -ECANCELED. */
int nri_stop_feed(struct wbg_nri *n, enum pending p, enum wbg_nri_error e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Whether the phase takes the event a request means. */
bool nri_allowed(const struct wbg_nri *n, enum nri_event ev);
/* Answers a request on the plugin's connection: the message (NULL: an
 * empty one), or a status with no payload when code is not 0. */
int nri_answer(struct wbg_nri *n, uint32_t stream, const ProtobufCMessage *m, int code, const char *message);
/* nri-requests.c: a reply on the runtime's connection, a request on the
 * plugin's. */
int nri_on_runtime_reply(struct wbg_nri *n, const struct nri_message *m);
int nri_on_request(struct wbg_nri *n, const struct nri_message *m);
