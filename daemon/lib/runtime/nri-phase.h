/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NRI connection's lifecycle: one named phase, and nri_phase_step(),
 * the table that alone says what an event does in each phase. The plugin
 * (nri-plugin.c) carries out the actions the step returns; a request the
 * table does not allow in the phase (a second Configure, an event before
 * Configure) is a protocol error, which closes the connection.
 *
 *   OFF --start--> WAITING --timer: connect--> (connected) REGISTERING
 *   REGISTERING --Configure--> CONFIGURED --Synchronize more--> SYNCING
 *   CONFIGURED|SYNCING --Synchronize last--> READY (events, for good)
 *   any connected phase --broken|shutdown|setup timer--> WAITING (backoff)
 *   any --stop--> OFF
 */
#pragma once

#include <stdbool.h>

enum nri_phase {
	NRI_OFF,         /* not wanted ([nri] enabled = no, or stopping) */
	NRI_WAITING,     /* not connected: the timer says when to try */
	NRI_REGISTERING, /* connected, RegisterPlugin sent; Configure not yet come */
	NRI_CONFIGURED,  /* Configure answered; the first Synchronize not yet come */
	NRI_SYNCING,     /* a split Synchronize under way (more = true) */
	NRI_READY,       /* synchronized: events come as they happen */
	_NRI_PHASE_MAX,
};

enum nri_event {
	NRI_EV_START,
	NRI_EV_STOP,
	NRI_EV_TIMER,          /* WAITING: time to connect; before READY: the setup deadline */
	NRI_EV_CONNECTED,
	NRI_EV_CONNECT_FAILED,
	NRI_EV_REGISTERED,     /* RegisterPlugin's reply, OK */
	NRI_EV_CONFIGURE,
	NRI_EV_SYNC_PART,      /* a Synchronize with more to follow */
	NRI_EV_SYNC_LAST,
	NRI_EV_EVENT,          /* a pod or container event (dedicated RPC or StateChange) */
	NRI_EV_SHUTDOWN,       /* the runtime is going down */
	NRI_EV_BROKEN,         /* hangup, bad input, a refusal, a write that cannot go */
	_NRI_EVENT_MAX,
};

enum {
	NRI_DO_CONNECT = 1 << 0,  /* try the socket now: CONNECTED or CONNECT_FAILED follows */
	NRI_DO_REGISTER = 1 << 1, /* send RegisterPlugin */
	NRI_DO_CLOSE = 1 << 2,    /* drop the connection and what it taught (the pod table) */
	NRI_DO_ARM_NOW = 1 << 3,  /* the timer at once */
	NRI_DO_BACKOFF = 1 << 4,  /* the timer after the backoff, which then doubles */
	NRI_DO_SETUP = 1 << 5,    /* the timer at the setup deadline, from connect (a peer that never finishes) */
	NRI_DO_DISARM = 1 << 6,
	NRI_DO_SYNCED = 1 << 7,   /* synchronized: the backoff starts over, reported */
};

struct nri_step {
	bool valid;          /* the event is allowed in the phase */
	enum nri_phase next;
	unsigned actions;
};

struct nri_step nri_phase_step(enum nri_phase phase, enum nri_event event);
const char *nri_phase_to_string(enum nri_phase p);
const char *nri_event_to_string(enum nri_event e);
/* Whether the phase has a connection. */
bool nri_phase_connected(enum nri_phase p);
