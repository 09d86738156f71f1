/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NRI's phase table, cell by cell, and its wire: frames and ttrpc
 * messages in pieces, split and joined, and every malformed header. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nri-phase.h"
#include "nri-wire.h"
#include "tap.h"

/* Each phase's row: the next phase for each event in enum order, or '-'
 * where the event is not allowed. o off, w waiting, r registering,
 * c configured, s synchronizing, y ready. Events: start stop timer
 * connected connect-failed registered configure sync-part sync-last event
 * shutdown broken. */
static const char *const table[_NRI_PHASE_MAX] = {
	[NRI_OFF] = "wo----------",
	[NRI_WAITING] = "-owrw-------",
	[NRI_REGISTERING] = "-ow--rc---ww",
	[NRI_CONFIGURED] = "-ow--c-sy-ww",
	[NRI_SYNCING] = "-ow--s-sy-ww",
	[NRI_READY] = "-o---y---yww",
};

static char letter(enum nri_phase p)
{
	return "owrcsy"[p];
}

struct seen {
	struct nri_message m[8];
	uint8_t data[8][16384];
	unsigned n;
};

static int collect(const struct nri_message *m, void *userdata)
{
	struct seen *s = userdata;

	if (s->n == 8 || m->len > sizeof(s->data[0]))
		return -E2BIG;
	memcpy(s->data[s->n], m->data, m->len);
	s->m[s->n] = *m;
	s->m[s->n].data = s->data[s->n];
	s->n++;
	return 0;
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static int feed_header(uint32_t conn, uint32_t len, const char *expect)
{
	struct nri_wire w;
	struct seen s = { .n = 0 };
	uint8_t h[8];
	int r;

	be32(h, conn);
	be32(h + 4, len);
	nri_wire_init(&w);
	r = nri_wire_feed(&w, h, sizeof(h), collect, &s);
	r = r == -EPROTO && strstr(w.error, expect) ? 0 : -1;
	nri_wire_done(&w);
	return r;
}

int main(void)
{
	struct nri_out o;
	struct nri_wire w;
	struct seen s = { .n = 0 };
	uint8_t payload[10000], bad[8 + 10];
	unsigned frames = 0, biggest = 0;
	int r;

	for (enum nri_phase p = 0; p < _NRI_PHASE_MAX; p++)
		for (enum nri_event e = 0; e < _NRI_EVENT_MAX; e++) {
			struct nri_step st = nri_phase_step(p, e);
			char got = st.valid ? letter(st.next) : '-';

			CHECK(got == table[p][e], "%s + %s -> %c (want %c)", nri_phase_to_string(p), nri_event_to_string(e),
			      got, table[p][e]);
		}
	/* every allowed cell's actions, written out */
	{
		static const struct {
			enum nri_phase p;
			enum nri_event e;
			unsigned actions;
		} want[] = {
			{ NRI_OFF, NRI_EV_START, NRI_DO_ARM_NOW },
			{ NRI_WAITING, NRI_EV_TIMER, NRI_DO_CONNECT },
			{ NRI_WAITING, NRI_EV_CONNECTED, NRI_DO_REGISTER | NRI_DO_SETUP },
			{ NRI_WAITING, NRI_EV_CONNECT_FAILED, NRI_DO_BACKOFF },
			{ NRI_REGISTERING, NRI_EV_REGISTERED, 0 },
			{ NRI_REGISTERING, NRI_EV_CONFIGURE, 0 }, /* the setup deadline runs from connect */
			{ NRI_CONFIGURED, NRI_EV_SYNC_PART, 0 },
			{ NRI_SYNCING, NRI_EV_SYNC_PART, 0 },
			{ NRI_CONFIGURED, NRI_EV_SYNC_LAST, NRI_DO_DISARM | NRI_DO_SYNCED },
			{ NRI_SYNCING, NRI_EV_SYNC_LAST, NRI_DO_DISARM | NRI_DO_SYNCED },
			{ NRI_READY, NRI_EV_EVENT, 0 },
			{ NRI_READY, NRI_EV_REGISTERED, 0 },
		};
		unsigned checked = 0, differ = 0;

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++, checked++)
			if (nri_phase_step(want[i].p, want[i].e).actions != want[i].actions)
				differ++;
		for (enum nri_phase p = 0; p < _NRI_PHASE_MAX; p++) {
			struct nri_step stop = nri_phase_step(p, NRI_EV_STOP);

			checked++;
			if (stop.actions != (NRI_DO_CLOSE | NRI_DO_DISARM))
				differ++;
			if (p == NRI_OFF || p == NRI_WAITING)
				continue;
			/* every connected phase: a broken connection or a
			 * shutdown closes and backs off; before ready, so does
			 * the setup deadline */
			checked += 2;
			if (nri_phase_step(p, NRI_EV_BROKEN).actions != (NRI_DO_CLOSE | NRI_DO_BACKOFF) ||
			    nri_phase_step(p, NRI_EV_SHUTDOWN).actions != (NRI_DO_CLOSE | NRI_DO_BACKOFF))
				differ++;
			if (p != NRI_READY &&
			    (checked++, nri_phase_step(p, NRI_EV_TIMER).actions != (NRI_DO_CLOSE | NRI_DO_BACKOFF)))
				differ++;
		}
		CHECK(differ == 0, "the actions of %u cells as written out (%u differ)", checked, differ);
	}

	/* a message of 10,000 bytes goes in three frames of at most 4 KiB */
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	nri_out_init(&o, 1 << 20);
	CHECK(nri_out_message(&o, NRI_CONN_PLUGIN, 5, NRI_TTRPC_RESPONSE, payload, sizeof(payload)) == 0, "queued");
	for (size_t off = 0; off < o.len;) {
		uint32_t len = (uint32_t)o.buf[off + 4] << 24 | o.buf[off + 5] << 16 | o.buf[off + 6] << 8 | o.buf[off + 7];

		frames++;
		biggest = len > biggest ? len : biggest;
		off += 8 + len;
	}
	CHECK(frames == 3 && biggest == NRI_FRAME_WRITE_MAX, "split in %u frames, the biggest %u bytes", frames, biggest);
	/* fed a byte at a time, it comes out whole, once */
	nri_wire_init(&w);
	r = 0;
	for (size_t i = 0; i < o.len && r == 0; i++)
		r = nri_wire_feed(&w, o.buf + i, 1, collect, &s);
	CHECK(r == 0 && s.n == 1, "byte by byte: one message");
	CHECK(s.n == 1 && s.m[0].conn == NRI_CONN_PLUGIN && s.m[0].stream == 5 && s.m[0].type == NRI_TTRPC_RESPONSE &&
		      s.m[0].len == sizeof(payload) && memcmp(s.m[0].data, payload, sizeof(payload)) == 0,
	      "its connection, stream, type and bytes");
	/* two messages on two connections in one feed */
	nri_out_consume(&o, o.len);
	nri_out_message(&o, NRI_CONN_RUNTIME, 1, NRI_TTRPC_REQUEST, payload, 3);
	nri_out_message(&o, NRI_CONN_PLUGIN, 7, NRI_TTRPC_REQUEST, payload, 0);
	s.n = 0;
	CHECK(nri_wire_feed(&w, o.buf, o.len, collect, &s) == 0 && s.n == 2 && s.m[0].conn == 2 && s.m[1].conn == 1 &&
		      s.m[1].len == 0,
	      "two messages, two connections, one of no bytes");
	nri_wire_done(&w);
	CHECK(nri_out_message(&o, 1, 1, 1, payload, NRI_TTRPC_MESSAGE_MAX + 1) == -EMSGSIZE, "a message over 4 MiB");
	nri_out_done(&o);
	nri_out_init(&o, 100);
	CHECK(nri_out_message(&o, 1, 1, 1, payload, 200) == -ENOBUFS, "past the output's bound: -ENOBUFS");
	nri_out_done(&o);

	CHECK(feed_header(1, 0xffffffffu, "a frame of 4294967295") == 0, "a frame of 4 GiB: refused");
	CHECK(feed_header(2, NRI_FRAME_MAX + 1, "a frame of 4194315") == 0, "a frame one byte over 4 MiB + 10: refused");
	{
		/* frames for connections 0 and 3 and an empty frame, then a
		 * message on connection 1: NRI's own mux skips and ignores
		 * them, and so does wbguard's */
		uint8_t in[64], msgbuf[32];
		size_t len = 0;

		be32(in, 3), be32(in + 4, 5), memcpy(in + 8, "abcde", 5), len = 13;
		be32(in + len, 0), be32(in + len + 4, 2), memcpy(in + len + 8, "xy", 2), len += 10;
		be32(in + len, 1), be32(in + len + 4, 0), len += 8;
		nri_out_init(&o, 1 << 20);
		nri_out_message(&o, NRI_CONN_PLUGIN, 9, NRI_TTRPC_REQUEST, (const uint8_t *)"hi", 2);
		memcpy(msgbuf, o.buf, o.len);
		memcpy(in + len, msgbuf, o.len);
		len += o.len;
		nri_out_done(&o);
		nri_wire_init(&w);
		s.n = 0;
		r = nri_wire_feed(&w, in, len, collect, &s);
		CHECK(r == 0 && s.n == 1 && s.m[0].stream == 9 && s.m[0].len == 2 && w.skipped_frames == 2,
		      "frames for connections 3 and 0 skipped (2 counted), an empty one ignored, the message after them read");
		nri_wire_done(&w);
	}
	/* a ttrpc header announcing 5 MiB */
	be32(bad, 1);
	be32(bad + 4, 10);
	be32(bad + 8, 5u << 20);
	be32(bad + 12, 1);
	bad[16] = 1;
	bad[17] = 0;
	nri_wire_init(&w);
	r = nri_wire_feed(&w, bad, sizeof(bad), collect, &s);
	CHECK(r == -EPROTO && strstr(w.error, "ttrpc message of 5242880 bytes"), "a ttrpc message over 4 MiB: %s", w.error);
	nri_wire_done(&w);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
