/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wbguardd as an NRI plugin: an external plugin on the runtime's socket
 * (containerd 2.x, CRI-O 1.30+), which learns every pod and container, at
 * connect (Synchronize) and as they come and go, and reports them through
 * its ops. It never returns an adjustment, an update or an eviction: every
 * answer is empty or says Unimplemented. It answers each request as it is
 * read (the runtime waits, node-wide, for every plugin), subscribes to the
 * four events it uses, and reconnects with a doubling backoff whenever the
 * connection ends. The state machine is nri-phase.h; the socket, its
 * timer and the reports are the owner's, through the ops, so the tests
 * drive it over a socketpair with a fake runtime.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nri-phase.h"

#define WBG_NRI_SERVICE_PLUGIN "nri.pkg.api.v1alpha1.Plugin"
#define WBG_NRI_SERVICE_RUNTIME "nri.pkg.api.v1alpha1.Runtime"
/* the events wbguardd uses: RunPodSandbox (1), RemovePodSandbox (3),
 * PostCreateContainer (5), RemoveContainer (11): bit e-1 for event e */
#define WBG_NRI_EVENT_MASK ((1u << 0) | (1u << 2) | (1u << 4) | (1u << 10))
#define WBG_NRI_BACKOFF_MIN_USEC 500000ULL
#define WBG_NRI_BACKOFF_MAX_USEC 30000000ULL
/* from connect to the end of Synchronize, at most: a runtime that stops
 * (or dawdles) half-way is given up on, and tried again */
#define WBG_NRI_SETUP_USEC 10000000ULL
/* pods remembered during a synchronization (for its containers, which
 * name their pod by id) */
#define WBG_NRI_PODS_MAX 16384
/* pods and containers in one Synchronize part: a 4 MiB part of empty
 * entries would unpack to 2 million structs */
#define WBG_NRI_SYNC_ENTRIES_MAX 65536
/* a pod's id: containerd's and CRI-O's are 64 hex digits */
#define WBG_NRI_ID_MAX 128
/* containers of a split synchronization whose pod is still to come */
#define WBG_NRI_DEFERRED_MAX 16384
#define WBG_NRI_DEFERRED_BYTES (16u << 20)
#define WBG_NRI_OUT_MAX (1u << 20)
/* the heap one message may unpack to: WBG_NRI_UNPACK_FACTOR times its size
 * on the wire and WBG_NRI_UNPACK_SLACK, at most WBG_NRI_UNPACK_BYTES_MAX
 * (a real Synchronize of strings unpacks to about its size; one of empty
 * map entries to 24 times it) */
#define WBG_NRI_UNPACK_FACTOR 16u
#define WBG_NRI_UNPACK_SLACK (64u << 10)
#define WBG_NRI_UNPACK_BYTES_MAX (32u << 20)

/* A container as NRI told it, its pod's names resolved. Strings are
 * never NULL ("" where NRI said nothing); valid for the call only. */
struct wbg_nri_container {
	const char *id;
	const char *pod_id;
	const char *name;       /* "" for a pod's sandbox */
	const char *pod, *namespace, *pod_uid;
	const char *cgroups_path;   /* linux.cgroupsPath as the runtime gave it */
	const char *dirty_expire;   /* the expiry annotation: the container's, else its pod's; NULL if neither */
	uint32_t pid;
	bool sandbox;
	bool synchronizing; /* from Synchronize: known before, told again at connect */
};

enum wbg_nri_event_kind {
	WBG_NRI_CONFIGURE,
	WBG_NRI_SYNCHRONIZE,
	WBG_NRI_RUN_POD_SANDBOX,
	WBG_NRI_REMOVE_POD_SANDBOX,
	WBG_NRI_POST_CREATE_CONTAINER,
	WBG_NRI_REMOVE_CONTAINER,
	WBG_NRI_SHUTDOWN,
	WBG_NRI_UNIMPLEMENTED, /* a method wbguardd does not serve, answered so */
	_WBG_NRI_EVENT_KIND_MAX,
};

enum wbg_nri_error {
	WBG_NRI_ERR_CONNECT,    /* no runtime on the socket */
	WBG_NRI_ERR_REFUSED,    /* RegisterPlugin answered with an error */
	WBG_NRI_ERR_PROTOCOL,   /* bad frames, bad protobuf, a request out of order */
	WBG_NRI_ERR_TIMEOUT,    /* the runtime stopped half-way through the setup */
	WBG_NRI_ERR_HANGUP,     /* the runtime closed the connection */
	WBG_NRI_ERR_WRITE,      /* an answer could not be written (a runtime that does not read) */
	WBG_NRI_ERR_TABLE_FULL, /* a pod or a deferred container over its table's bound: not kept */
	WBG_NRI_ERR_TOO_BIG,    /* a message that unpacks past its budget (WBG_NRI_UNPACK_*) */
	_WBG_NRI_ERROR_MAX,
};

struct wbg_nri_ops {
	uint64_t (*now)(void *userdata); /* CLOCK_MONOTONIC, usec */
	/* A connected, non-blocking socket to the runtime in *ret_fd, or a
	 * negative errno. */
	int (*connect)(void *userdata, int *ret_fd);
	/* A container (or a pod's sandbox) seen: at synchronization, or
	 * created. */
	void (*container)(void *userdata, const struct wbg_nri_container *c);
	/* A container or a pod's sandbox removed by the runtime. */
	void (*removed)(void *userdata, const char *id, const char *cgroups_path);
	/* The synchronization is complete: every pod and container is known. */
	void (*synced)(void *userdata, unsigned pods, unsigned containers);
};

struct wbg_nri_stats {
	uint64_t connections;  /* connected and registered */
	uint64_t events[_WBG_NRI_EVENT_KIND_MAX];
	uint64_t errors[_WBG_NRI_ERROR_MAX];
};

struct wbg_nri;

struct wbg_nri_params {
	const char *plugin_name, *plugin_index;
};

int nri_new(const struct wbg_nri_params *params, const struct wbg_nri_ops *ops, void *userdata,
	    struct wbg_nri **ret);
struct wbg_nri *nri_free(struct wbg_nri *n);
/* Starts connecting (at once), or stops and closes. */
void nri_start(struct wbg_nri *n);
void nri_stop(struct wbg_nri *n);
/* The socket is readable (EPOLLIN), writable (EPOLLOUT) or gone (EPOLLHUP,
 * EPOLLERR): reads what is there, answers, writes what it can. */
void nri_io(struct wbg_nri *n, uint32_t revents);
/* The timer came due. */
void nri_timer(struct wbg_nri *n);
/* Drops the connection and tries again after the backoff (the owner could
 * not watch the socket). */
void nri_reconnect(struct wbg_nri *n);
/* What the owner watches: the socket (-1 when none), whether it waits to
 * write, and when the timer is due (UINT64_MAX: never). */
int nri_fd(const struct wbg_nri *n);
bool nri_wants_write(const struct wbg_nri *n);
uint64_t nri_deadline(const struct wbg_nri *n);
enum nri_phase nri_phase(const struct wbg_nri *n);
/* "containerd 2.1.9" once configured, else "". */
const char *nri_runtime(const struct wbg_nri *n);
void nri_stats(const struct wbg_nri *n, struct wbg_nri_stats *ret);
const char *nri_event_kind_to_string(enum wbg_nri_event_kind k);
const char *nri_error_to_string(enum wbg_nri_error e);
