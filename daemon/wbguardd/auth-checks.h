/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Basic-auth checks that need a bcrypt, off the event loop. A bcrypt costs
 * 2^cost rounds (cost 10: about 0.1 s of a core, 12: 0.4 s): run on the
 * loop, a stranger's guesses held every handover, hook call and probe
 * behind them. Here one worker thread runs them, AUTH_QUEUE_MAX at most
 * waiting, and the loop hears of each result through an eventfd.
 *
 * Who may have one now: a few a second per peer address (a table of
 * AUTH_PEERS addresses, the least recently seen making room), from one of
 * two node-wide budgets: peers whose credentials bcrypt has accepted
 * before (the scraper, after a restart or a new password) draw on a
 * reserve that strangers, however many addresses they use, cannot touch.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

#define AUTH_QUEUE_MAX 4
#define AUTH_PEERS 64
/* per address: 1 a second, 4 at once; strangers together 2 a second, 4 at
 * once; known peers together the same, apart */
#define AUTH_PEER_PER_SEC 1
#define AUTH_PEER_BURST 4
#define AUTH_POOL_PER_SEC 2
#define AUTH_POOL_BURST 4

struct auth_checks;

/* A check's end, on the loop: result 1 (accepted; digest is what
 * web_config_remember() keeps), 0 (refused), or -ECANCELED (the checks
 * freed first). req is the submitter's. */
typedef void (*auth_done_fn)(void *req, int result, const uint8_t digest[32], void *userdata);

int auth_checks_new(sd_event *e, auth_done_fn done, void *userdata, struct auth_checks **ret);
/* Joins the worker; a check not run yet ends -ECANCELED (done called). */
struct auth_checks *auth_checks_free(struct auth_checks *a);
/* Whether peer may have a bcrypt now (now: CLOCK_MONOTONIC usec); counts a
 * refusal. */
bool auth_checks_admit(struct auth_checks *a, const struct sockaddr *peer, uint64_t now);
/* Queues a check of password against hash (user named for the digest;
 * known: whether hash is user's own, not a stand-in for an unknown name).
 * 0, or -EBUSY when AUTH_QUEUE_MAX wait (the caller answers 429). peer's
 * credentials accepted make it a known peer. */
int auth_checks_submit(struct auth_checks *a, void *req, const struct sockaddr *peer, const char *user,
		       const char *password, const char *hash, bool known);
struct auth_checks_stats {
	uint64_t run, refused_rate, refused_busy;
};
void auth_checks_stats(const struct auth_checks *a, struct auth_checks_stats *ret);
