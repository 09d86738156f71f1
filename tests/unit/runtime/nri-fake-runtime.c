/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nri-fake-runtime.h"
#include "nri-plugin.h"

void fake_init(struct fake_rt *f, int fd)
{
	*f = (struct fake_rt){ .fd = fd, .next_stream = 1 };
	nri_wire_init(&f->wire);
	nri_out_init(&f->out, 64u << 20);
}

void fake_done(struct fake_rt *f)
{
	if (f->fd >= 0)
		close(f->fd);
	nri_wire_done(&f->wire);
	nri_out_done(&f->out);
	ttrpc__response__free_unpacked(f->reply, NULL);
	ttrpc__request__free_unpacked(f->call, NULL);
	f->reply = NULL;
	f->call = NULL;
}

int fake_flush(struct fake_rt *f)
{
	while (f->out.len) {
		ssize_t k = send(f->fd, f->out.buf, f->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0)
			return errno == EAGAIN ? 0 : -errno;
		nri_out_consume(&f->out, (size_t)k);
	}
	return 0;
}

static int send_msg(struct fake_rt *f, uint32_t conn, uint32_t stream, uint8_t type, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	int r;

	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(m, buf);
	r = nri_out_message(&f->out, conn, stream, type, buf, len);
	free(buf);
	return r < 0 ? r : fake_flush(f);
}

uint32_t fake_call_service(struct fake_rt *f, const char *service, const char *method, const ProtobufCMessage *m)
{
	Ttrpc__Request req = TTRPC__REQUEST__INIT;
	uint32_t stream = f->next_stream;
	uint8_t *payload = NULL;

	f->next_stream += 2;
	if (m) {
		req.payload.len = protobuf_c_message_get_packed_size(m);
		payload = malloc(req.payload.len ? req.payload.len : 1);
		if (!payload)
			return 0;
		protobuf_c_message_pack(m, payload);
		req.payload.data = payload;
	}
	req.service = (char *)service;
	req.method = (char *)method;
	req.timeout_nano = 2000000000; /* NRI's 2 s request timeout */
	if (send_msg(f, NRI_CONN_PLUGIN, stream, NRI_TTRPC_REQUEST, &req.base) < 0)
		stream = 0;
	free(payload);
	return stream;
}

uint32_t fake_call(struct fake_rt *f, const char *method, const ProtobufCMessage *m)
{
	return fake_call_service(f, WBG_NRI_SERVICE_PLUGIN, method, m);
}

int fake_answer_register(struct fake_rt *f, int code, const char *message)
{
	Ttrpc__Response rsp = TTRPC__RESPONSE__INIT;
	Ttrpc__Status st = TTRPC__STATUS__INIT;

	if (code) {
		st.code = code;
		st.message = (char *)message;
		rsp.status = &st;
	}
	return send_msg(f, NRI_CONN_RUNTIME, f->call_stream, NRI_TTRPC_RESPONSE, &rsp.base);
}

int fake_send_raw(struct fake_rt *f, const void *buf, size_t n)
{
	return send(f->fd, buf, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -errno;
}

static int on_msg(const struct nri_message *m, void *userdata)
{
	struct fake_rt *f = userdata;

	if (m->conn == NRI_CONN_PLUGIN && m->type == NRI_TTRPC_RESPONSE) {
		ttrpc__response__free_unpacked(f->reply, NULL);
		f->reply = ttrpc__response__unpack(NULL, m->len, m->data);
		f->reply_stream = m->stream;
		f->replies++;
		if (!f->reply)
			f->bad = true;
	} else if (m->conn == NRI_CONN_RUNTIME && m->type == NRI_TTRPC_REQUEST) {
		ttrpc__request__free_unpacked(f->call, NULL);
		f->call = ttrpc__request__unpack(NULL, m->len, m->data);
		f->call_stream = m->stream;
		if (!f->call)
			f->bad = true;
	} else
		f->bad = true;
	return 0;
}

void fake_pump(struct fake_rt *f, int wait_ms)
{
	struct pollfd p = { .fd = f->fd, .events = POLLIN };
	uint8_t buf[65536];

	while (!f->hangup && poll(&p, 1, wait_ms) > 0) {
		ssize_t k = recv(f->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (k < 0 && errno == EAGAIN)
			break;
		if (k <= 0) {
			f->hangup = true;
			break;
		}
		if (nri_wire_feed(&f->wire, buf, (size_t)k, on_msg, f) < 0)
			f->bad = true;
		wait_ms = 0;
	}
}

const Ttrpc__Response *fake_wait_reply(struct fake_rt *f, uint32_t stream, int wait_ms)
{
	struct pollfd p = { .fd = f->fd };

	for (;;) {
		if (f->reply && f->reply_stream == stream)
			return f->reply;
		/* what the socket did not take yet goes as it drains */
		p.events = POLLIN | (f->out.len ? POLLOUT : 0);
		if (f->hangup || poll(&p, 1, wait_ms) <= 0)
			return NULL;
		if ((p.revents & POLLOUT) && fake_flush(f) < 0)
			return NULL;
		fake_pump(f, 0);
	}
}

static Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry **pod_annotation(const char *expire, size_t *n)
{
	Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry **v, *e;

	*n = 0;
	if (!expire)
		return NULL;
	v = calloc(1, sizeof(*v));
	e = calloc(1, sizeof(*e));
	nri__pkg__api__v1alpha1__pod_sandbox__annotations_entry__init(e);
	e->key = strdup("wbguard.io/dirty-expire");
	e->value = strdup(expire);
	v[0] = e;
	*n = 1;
	return v;
}

Nri__Pkg__Api__V1alpha1__PodSandbox *fake_pod(const char *id, const char *name, const char *ns,
					      const char *cgroups_path, const char *expire)
{
	Nri__Pkg__Api__V1alpha1__PodSandbox *p = calloc(1, sizeof(*p));
	Nri__Pkg__Api__V1alpha1__LinuxPodSandbox *l = calloc(1, sizeof(*l));

	nri__pkg__api__v1alpha1__pod_sandbox__init(p);
	nri__pkg__api__v1alpha1__linux_pod_sandbox__init(l);
	p->id = strdup(id);
	p->name = strdup(name);
	p->namespace_ = strdup(ns);
	p->uid = strdup("uid-0");
	l->cgroups_path = strdup(cgroups_path ? cgroups_path : "");
	p->linux = l;
	p->annotations = pod_annotation(expire, &p->n_annotations);
	return p;
}

Nri__Pkg__Api__V1alpha1__Container *fake_container(const char *id, const char *pod_id, const char *name,
						   const char *cgroups_path, const char *expire)
{
	Nri__Pkg__Api__V1alpha1__Container *c = calloc(1, sizeof(*c));
	Nri__Pkg__Api__V1alpha1__LinuxContainer *l = calloc(1, sizeof(*l));

	nri__pkg__api__v1alpha1__container__init(c);
	nri__pkg__api__v1alpha1__linux_container__init(l);
	c->id = strdup(id);
	c->pod_sandbox_id = strdup(pod_id);
	c->name = strdup(name);
	l->cgroups_path = strdup(cgroups_path);
	c->linux = l;
	if (expire) {
		Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry *e = calloc(1, sizeof(*e));

		nri__pkg__api__v1alpha1__container__annotations_entry__init(e);
		e->key = strdup("wbguard.io/dirty-expire");
		e->value = strdup(expire);
		c->annotations = calloc(1, sizeof(*c->annotations));
		c->annotations[0] = e;
		c->n_annotations = 1;
	}
	c->pid = 4242;
	return c;
}

/* Every part was malloc'd (strdup, calloc) as protobuf-c's own unpacking
 * does: its free takes them the same way. */
void fake_free_pod(Nri__Pkg__Api__V1alpha1__PodSandbox *p)
{
	if (p)
		nri__pkg__api__v1alpha1__pod_sandbox__free_unpacked(p, NULL);
}

void fake_free_container(Nri__Pkg__Api__V1alpha1__Container *c)
{
	if (c)
		nri__pkg__api__v1alpha1__container__free_unpacked(c, NULL);
}
