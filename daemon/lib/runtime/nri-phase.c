/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "nri-phase.h"

#define ANY_CONNECTED ((1u << NRI_REGISTERING) | (1u << NRI_CONFIGURED) | (1u << NRI_SYNCING) | (1u << NRI_READY))
#define BEFORE_READY ((1u << NRI_REGISTERING) | (1u << NRI_CONFIGURED) | (1u << NRI_SYNCING))
#define ALL ((1u << _NRI_PHASE_MAX) - 1)
#define SAME _NRI_PHASE_MAX /* the phase it is in */

/* The table: the first cell whose phase set and event match decides. */
static const struct cell {
	unsigned phases; /* a set of enum nri_phase bits */
	enum nri_event event;
	enum nri_phase next;
	unsigned actions;
} cells[] = {
	{ 1u << NRI_OFF, NRI_EV_START, NRI_WAITING, NRI_DO_ARM_NOW },
	{ ALL, NRI_EV_STOP, NRI_OFF, NRI_DO_CLOSE | NRI_DO_DISARM },
	{ 1u << NRI_WAITING, NRI_EV_TIMER, NRI_WAITING, NRI_DO_CONNECT },
	{ 1u << NRI_WAITING, NRI_EV_CONNECTED, NRI_REGISTERING, NRI_DO_REGISTER | NRI_DO_SETUP },
	{ 1u << NRI_WAITING, NRI_EV_CONNECT_FAILED, NRI_WAITING, NRI_DO_BACKOFF },
	/* the reply may come before or after Configure: the runtime answers
	 * and calls from two goroutines */
	{ ANY_CONNECTED, NRI_EV_REGISTERED, SAME, 0 },
	/* the setup deadline runs from connect: a runtime that sends a part
	 * now and then does not hold the connection half-set-up */
	{ 1u << NRI_REGISTERING, NRI_EV_CONFIGURE, NRI_CONFIGURED, 0 },
	{ (1u << NRI_CONFIGURED) | (1u << NRI_SYNCING), NRI_EV_SYNC_PART, NRI_SYNCING, 0 },
	{ (1u << NRI_CONFIGURED) | (1u << NRI_SYNCING), NRI_EV_SYNC_LAST, NRI_READY, NRI_DO_DISARM | NRI_DO_SYNCED },
	{ 1u << NRI_READY, NRI_EV_EVENT, SAME, 0 },
	{ BEFORE_READY, NRI_EV_TIMER, NRI_WAITING, NRI_DO_CLOSE | NRI_DO_BACKOFF },
	{ ANY_CONNECTED, NRI_EV_SHUTDOWN, NRI_WAITING, NRI_DO_CLOSE | NRI_DO_BACKOFF },
	{ ANY_CONNECTED, NRI_EV_BROKEN, NRI_WAITING, NRI_DO_CLOSE | NRI_DO_BACKOFF },
};

struct nri_step nri_phase_step(enum nri_phase phase, enum nri_event event)
{
	for (unsigned i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)
		if ((cells[i].phases & (1u << phase)) && cells[i].event == event)
			return (struct nri_step){ .valid = true,
						  .next = cells[i].next == SAME ? phase : cells[i].next,
						  .actions = cells[i].actions };
	return (struct nri_step){ .valid = false, .next = phase };
}

bool nri_phase_connected(enum nri_phase p)
{
	return ANY_CONNECTED & (1u << p);
}

const char *nri_phase_to_string(enum nri_phase p)
{
	static const char *const s[_NRI_PHASE_MAX] = {
		[NRI_OFF] = "off",
		[NRI_WAITING] = "waiting",
		[NRI_REGISTERING] = "registering",
		[NRI_CONFIGURED] = "configured",
		[NRI_SYNCING] = "synchronizing",
		[NRI_READY] = "ready",
	};
	return p < _NRI_PHASE_MAX ? s[p] : "?";
}

const char *nri_event_to_string(enum nri_event e)
{
	static const char *const s[_NRI_EVENT_MAX] = {
		[NRI_EV_START] = "start",
		[NRI_EV_STOP] = "stop",
		[NRI_EV_TIMER] = "timer",
		[NRI_EV_CONNECTED] = "connected",
		[NRI_EV_CONNECT_FAILED] = "connect-failed",
		[NRI_EV_REGISTERED] = "registered",
		[NRI_EV_CONFIGURE] = "configure",
		[NRI_EV_SYNC_PART] = "sync-part",
		[NRI_EV_SYNC_LAST] = "sync-last",
		[NRI_EV_EVENT] = "event",
		[NRI_EV_SHUTDOWN] = "shutdown",
		[NRI_EV_BROKEN] = "broken",
	};
	return e < _NRI_EVENT_MAX ? s[e] : "?";
}
