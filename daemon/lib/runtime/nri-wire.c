/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nri-wire.h"

_Static_assert(NRI_FRAME_WRITE_MAX <= 4096, "NRI's Go multiplexer reads frames into 4 KiB buffers");

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

void nri_wire_init(struct nri_wire *w)
{
	*w = (struct nri_wire){ 0 };
}

void nri_wire_done(struct nri_wire *w)
{
	for (size_t i = 0; i < 2; i++)
		free(w->streams[i].buf);
	nri_wire_init(w);
}

static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 4096;
	uint8_t *b;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	b = realloc(*buf, c);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*cap = c;
	return 0;
}

/* Hands out every whole message the stream holds, then keeps the rest at
 * its start. A stream holds at most one message and a frame beyond it. */
static int drain(struct nri_wire *w, uint32_t conn, nri_message_fn fn, void *userdata)
{
	struct nri_stream *s = &w->streams[conn - 1];
	size_t off = 0;
	int r = 0;

	while (s->len - off >= NRI_TTRPC_HEADER) {
		const uint8_t *h = s->buf + off;
		uint32_t len = get_be32(h);
		struct nri_message m;

		if (len > NRI_TTRPC_MESSAGE_MAX) {
			snprintf(w->error, sizeof(w->error), "a ttrpc message of %u bytes on connection %u (at most %u)",
				 len, conn, NRI_TTRPC_MESSAGE_MAX);
			return -EPROTO;
		}
		if (s->len - off - NRI_TTRPC_HEADER < len)
			break;
		m = (struct nri_message){ .conn = conn, .stream = get_be32(h + 4), .type = h[8], .flags = h[9],
					  .data = h + NRI_TTRPC_HEADER, .len = len };
		off += NRI_TTRPC_HEADER + len;
		r = fn(&m, userdata);
		if (r < 0)
			break;
	}
	memmove(s->buf, s->buf + off, s->len - off);
	s->len -= off;
	if (s->len == 0 && s->cap > 65536) {
		/* one big message does not keep its buffer for good */
		free(s->buf);
		*s = (struct nri_stream){ 0 };
	}
	return r < 0 ? r : 0;
}

int nri_wire_feed(struct nri_wire *w, const uint8_t *buf, size_t n, nri_message_fn fn, void *userdata)
{
	while (n > 0) {
		struct nri_stream *s;
		size_t take;
		int r;

		if (w->frame_left == 0) {
			take = NRI_FRAME_HEADER - w->hdr_len;
			if (take > n)
				take = n;
			memcpy(w->hdr + w->hdr_len, buf, take);
			w->hdr_len += take;
			buf += take;
			n -= take;
			if (w->hdr_len < NRI_FRAME_HEADER)
				return 0;
			w->hdr_len = 0;
			w->frame_conn = get_be32(w->hdr);
			w->frame_left = get_be32(w->hdr + 4);
			if (w->frame_left > NRI_FRAME_MAX) {
				snprintf(w->error, sizeof(w->error), "a frame of %zu bytes (at most %u)", w->frame_left,
					 NRI_FRAME_MAX);
				return -EPROTO;
			}
			if (w->frame_conn != NRI_CONN_PLUGIN && w->frame_conn != NRI_CONN_RUNTIME)
				w->skipped_frames++;
			continue;
		}
		if (w->frame_conn != NRI_CONN_PLUGIN && w->frame_conn != NRI_CONN_RUNTIME) {
			take = w->frame_left < n ? w->frame_left : n;
			buf += take;
			n -= take;
			w->frame_left -= take;
			continue;
		}
		s = &w->streams[w->frame_conn - 1];
		take = w->frame_left < n ? w->frame_left : n;
		r = reserve(&s->buf, &s->cap, s->len + take);
		if (r < 0)
			return r;
		memcpy(s->buf + s->len, buf, take);
		s->len += take;
		buf += take;
		n -= take;
		w->frame_left -= take;
		r = drain(w, w->frame_conn, fn, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

void nri_out_init(struct nri_out *o, size_t max)
{
	*o = (struct nri_out){ .max = max };
}

void nri_out_done(struct nri_out *o)
{
	free(o->buf);
	nri_out_init(o, o->max);
}

int nri_out_message(struct nri_out *o, uint32_t conn, uint32_t stream, uint8_t type, const uint8_t *payload,
		    size_t len)
{
	size_t total = NRI_TTRPC_HEADER + len, frames = (total + NRI_FRAME_WRITE_MAX - 1) / NRI_FRAME_WRITE_MAX;
	size_t need = o->len + total + frames * NRI_FRAME_HEADER, done = 0;
	uint8_t msg[NRI_TTRPC_HEADER];
	int r;

	if (len > NRI_TTRPC_MESSAGE_MAX)
		return -EMSGSIZE;
	if (need > o->max)
		return -ENOBUFS;
	r = reserve(&o->buf, &o->cap, need);
	if (r < 0)
		return r;
	put_be32(msg, len);
	put_be32(msg + 4, stream);
	msg[8] = type;
	msg[9] = 0;
	while (done < total) {
		size_t chunk = total - done < NRI_FRAME_WRITE_MAX ? total - done : NRI_FRAME_WRITE_MAX;
		uint8_t *p = o->buf + o->len;

		put_be32(p, conn);
		put_be32(p + 4, chunk);
		p += NRI_FRAME_HEADER;
		for (size_t i = 0; i < chunk; i++, done++)
			p[i] = done < NRI_TTRPC_HEADER ? msg[done] : payload[done - NRI_TTRPC_HEADER];
		o->len += NRI_FRAME_HEADER + chunk;
	}
	return 0;
}

void nri_out_consume(struct nri_out *o, size_t n)
{
	if (n > o->len)
		n = o->len;
	memmove(o->buf, o->buf + n, o->len - n);
	o->len -= n;
}
