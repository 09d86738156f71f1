/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A runtime's side of NRI, for tests and the benchmark: it speaks the
 * multiplexer and ttrpc as containerd's adaptation does (its calls on
 * connection 1 with odd stream ids, the plugin's RegisterPlugin answered
 * on connection 2), through wbguard's own wire code, and encodes NRI's
 * messages with the same generated code. Requests are built from the
 * messages wbguard declares (PodContainerRequest is every event's shape).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "nri-wire.h"
#include "nri.pb-c.h"
#include "ttrpc.pb-c.h"

struct fake_rt {
	int fd;
	struct nri_wire wire;
	struct nri_out out;
	uint32_t next_stream;
	/* the last reply to the runtime's calls, and its stream */
	Ttrpc__Response *reply;
	uint32_t reply_stream;
	unsigned replies;
	/* the plugin's last call (RegisterPlugin), and its stream */
	Ttrpc__Request *call;
	uint32_t call_stream;
	bool hangup, bad;
};

void fake_init(struct fake_rt *f, int fd);
void fake_done(struct fake_rt *f);
/* Sends a call of the plugin's service (queued where the socket is full):
 * its stream id. */
uint32_t fake_call(struct fake_rt *f, const char *method, const ProtobufCMessage *m);
uint32_t fake_call_service(struct fake_rt *f, const char *service, const char *method, const ProtobufCMessage *m);
/* Answers the plugin's RegisterPlugin: OK (code 0) or an error. */
int fake_answer_register(struct fake_rt *f, int code, const char *message);
/* Writes what is queued as far as the socket takes it now: 0 (the rest
 * stays queued: fake_pending()), or -errno. */
int fake_flush(struct fake_rt *f);
static inline size_t fake_pending(const struct fake_rt *f)
{
	return f->out.len;
}
/* Writes bytes as they are (bad input). */
int fake_send_raw(struct fake_rt *f, const void *buf, size_t n);
/* Reads what has come within wait_ms (0: what is there now): replies and
 * calls parsed; hangup set when the plugin closed. */
void fake_pump(struct fake_rt *f, int wait_ms);
/* Waits up to wait_ms for the reply on stream: it, or NULL. */
const Ttrpc__Response *fake_wait_reply(struct fake_rt *f, uint32_t stream, int wait_ms);

/* Builders of NRI's messages: pods and containers with the names,
 * cgroups path and annotations the tests need; freed with fake_free_*. */
Nri__Pkg__Api__V1alpha1__PodSandbox *fake_pod(const char *id, const char *name, const char *ns,
					      const char *cgroups_path, const char *expire);
Nri__Pkg__Api__V1alpha1__Container *fake_container(const char *id, const char *pod_id, const char *name,
						   const char *cgroups_path, const char *expire);
void fake_free_pod(Nri__Pkg__Api__V1alpha1__PodSandbox *p);
void fake_free_container(Nri__Pkg__Api__V1alpha1__Container *c);
