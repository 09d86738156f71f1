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
	bool in_feed;        /* the wire's buffers are being read: no close now */
	bool skipped_logged; /* frames for other multiplexer connections, said once */
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
/* nri-requests.c: one whole message from the runtime handled (answered,
 * reported); *ret the fact it was for the phase (_NRI_EVENT_MAX: none).
 * -ECANCELED with pending set for a closing one. */
int nri_on_message(struct wbg_nri *n, const struct nri_message *m, enum nri_event *ret);
/* RegisterPlugin queued on the runtime's connection. */
int nri_send_register(struct wbg_nri *n);
