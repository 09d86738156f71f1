/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NRI's wire below the messages: its multiplexer (frames of a 4-byte
 * connection id and a 4-byte length, both big-endian, then that many bytes
 * of the connection's stream) carrying two ttrpc channels (each message a
 * 10-byte header: length, stream id, type, flags, then the length's bytes
 * of protobuf). Connection 1 carries the runtime's calls of the plugin's
 * service, connection 2 the plugin's calls of the runtime's. Pure: bytes
 * in, messages out, so the fuzzer and the tests drive it without a socket.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define NRI_CONN_PLUGIN 1  /* the runtime calls, wbguardd answers */
#define NRI_CONN_RUNTIME 2 /* wbguardd calls (RegisterPlugin), the runtime answers */

#define NRI_FRAME_HEADER 8
#define NRI_TTRPC_HEADER 10
/* ttrpc's limit on a message (4 MiB), which the runtime splits a
 * synchronization to stay under; a frame may carry that and its header */
#define NRI_TTRPC_MESSAGE_MAX (4u << 20)
#define NRI_FRAME_MAX (NRI_TTRPC_MESSAGE_MAX + NRI_TTRPC_HEADER)
/* what wbguardd writes in one frame: NRI's Go multiplexer hands a frame
 * to ttrpc's 4 KiB reads whole, and fails one that does not fit */
#define NRI_FRAME_WRITE_MAX 4096

enum {
	NRI_TTRPC_REQUEST = 1,
	NRI_TTRPC_RESPONSE = 2,
	NRI_TTRPC_DATA = 3,
};

struct nri_message {
	uint32_t conn;
	uint32_t stream;
	uint8_t type, flags;
	const uint8_t *data;
	size_t len;
};

/* One connection's stream, reassembled from its frames. */
struct nri_stream {
	uint8_t *buf;
	size_t len, cap;
};

struct nri_wire {
	uint8_t hdr[NRI_FRAME_HEADER];
	size_t hdr_len;       /* bytes of the current frame's header read */
	uint32_t frame_conn;
	size_t frame_left;    /* payload bytes of the current frame still to come */
	uint64_t skipped_frames; /* for connections other than 1 and 2: dropped, as NRI's own mux does */
	struct nri_stream streams[2]; /* connections 1 and 2 */
	char error[160];      /* why the last feed failed */
};

/* Called for each whole ttrpc message; a negative return stops the feed
 * and is returned. */
typedef int (*nri_message_fn)(const struct nri_message *m, void *userdata);

void nri_wire_init(struct nri_wire *w);
void nri_wire_done(struct nri_wire *w);
/* Takes n bytes read from the socket. -EPROTO (a ttrpc message over
 * NRI_TTRPC_MESSAGE_MAX, or a frame over NRI_FRAME_MAX) with w->error
 * saying which, -ENOMEM, or a callback's error; 0 otherwise, partial
 * frames and messages kept for the next feed. Frames for another
 * connection are skipped and empty ones ignored, as NRI's multiplexer
 * does (a newer NRI may open a third connection). */
int nri_wire_feed(struct nri_wire *w, const uint8_t *buf, size_t n, nri_message_fn fn, void *userdata);

/* An output buffer: what is still to be written to the socket. */
struct nri_out {
	uint8_t *buf;
	size_t len, cap, max;
};
void nri_out_init(struct nri_out *o, size_t max);
void nri_out_done(struct nri_out *o);
/* Appends one ttrpc message on conn in frames of at most
 * NRI_FRAME_WRITE_MAX bytes. -ENOBUFS past the buffer's max (a peer that
 * does not read), -EMSGSIZE for a message over NRI_TTRPC_MESSAGE_MAX. */
int nri_out_message(struct nri_out *o, uint32_t conn, uint32_t stream, uint8_t type, const uint8_t *payload,
		    size_t len);
/* Drops the first n bytes (written). */
void nri_out_consume(struct nri_out *o, size_t n);
