/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What each NRI request means to wbguardd: RegisterPlugin's reply,
 * Configure (the subscription), Synchronize (every pod and container, maybe
 * in parts), the four events wbguardd subscribes to, whether they come by
 * their own RPC (NRI v0.12) or as StateChange (every version), Shutdown,
 * and Unimplemented for everything else. Every answer is empty but
 * Configure's and Synchronize's, which adjust nothing. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nri-internal.h"
#include "nri.pb-c.h"
#include "ttrpc.pb-c.h"
#include "wbg-base.h"

/* NRI's enum Event */
enum {
	EVENT_RUN_POD_SANDBOX = 1,
	EVENT_REMOVE_POD_SANDBOX = 3,
	EVENT_POST_CREATE_CONTAINER = 5,
	EVENT_REMOVE_CONTAINER = 11,
};

typedef Nri__Pkg__Api__V1alpha1__PodContainerRequest PodContainerRequest;

static int stop_feed(struct wbg_nri *n, enum pending p, enum wbg_nri_error e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int stop_feed(struct wbg_nri *n, enum pending p, enum wbg_nri_error e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(n->why, sizeof(n->why), fmt, ap);
	va_end(ap);
	n->pending = p;
	n->pending_error = e;
	return -ECANCELED;
}

static bool allowed(const struct wbg_nri *n, enum nri_event ev)
{
	return nri_phase_step(n->phase, ev).valid;
}

static int send_message(struct wbg_nri *n, uint32_t conn, uint32_t stream, uint8_t type, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	_cleanup_free_ uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(m, buf);
	return nri_out_message(&n->out, conn, stream, type, buf, len);
}

int nri_send_register(struct wbg_nri *n)
{
	Nri__Pkg__Api__V1alpha1__RegisterPluginRequest req = NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;
	Ttrpc__Request call = TTRPC__REQUEST__INIT;
	_cleanup_free_ uint8_t *payload = NULL;

	req.plugin_name = n->plugin_name;
	req.plugin_idx = n->plugin_index;
	call.payload.len = protobuf_c_message_get_packed_size(&req.base);
	payload = malloc(call.payload.len ? call.payload.len : 1);
	if (!payload)
		return -ENOMEM;
	protobuf_c_message_pack(&req.base, payload);
	call.payload.data = payload;
	call.service = (char *)WBG_NRI_SERVICE_RUNTIME;
	call.method = (char *)"RegisterPlugin";
	return send_message(n, NRI_CONN_RUNTIME, REGISTER_STREAM, NRI_TTRPC_REQUEST, &call.base);
}

static int answer(struct wbg_nri *n, uint32_t stream, const ProtobufCMessage *m, int code, const char *message)
{
	Ttrpc__Response rsp = TTRPC__RESPONSE__INIT;
	Ttrpc__Status status = TTRPC__STATUS__INIT;
	_cleanup_free_ uint8_t *payload = NULL;

	if (code != 0) {
		status.code = code;
		status.message = (char *)message;
		rsp.status = &status;
	} else if (m) {
		rsp.payload.len = protobuf_c_message_get_packed_size(m);
		payload = malloc(rsp.payload.len ? rsp.payload.len : 1);
		if (!payload)
			return -ENOMEM;
		protobuf_c_message_pack(m, payload);
		rsp.payload.data = payload;
	}
	return send_message(n, NRI_CONN_PLUGIN, stream, NRI_TTRPC_RESPONSE, &rsp.base);
}



/* protobuf-c's allocations for one message, within a budget of its size on
 * the wire: a map entry of 2 bytes there is a struct and a pointer of 48
 * unpacked, so a 4 MiB message of empty annotations would take over 100 MiB
 * of heap. Past it the unpack fails (and the message is refused). */
struct unpack_budget {
	ProtobufCAllocator a;
	size_t left;
	bool exceeded;
};

#define UNPACK_HEADER 16 /* the block's size before it, keeping max_align_t's alignment */

static void *budget_alloc(void *data, size_t size)
{
	struct unpack_budget *b = data;
	char *p;

	if (size > b->left || size > SIZE_MAX - UNPACK_HEADER) {
		b->exceeded = true;
		return NULL;
	}
	p = malloc(size + UNPACK_HEADER);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof(size));
	b->left -= size;
	return p + UNPACK_HEADER;
}

static void budget_free(void *data, void *ptr)
{
	struct unpack_budget *b = data;
	size_t size;

	if (!ptr)
		return;
	memcpy(&size, (char *)ptr - UNPACK_HEADER, sizeof(size));
	b->left += size;
	free((char *)ptr - UNPACK_HEADER);
}

static void budget_init(struct unpack_budget *b, size_t wire_len)
{
	size_t left = wire_len > (WBG_NRI_UNPACK_BYTES_MAX - WBG_NRI_UNPACK_SLACK) / WBG_NRI_UNPACK_FACTOR
			      ? WBG_NRI_UNPACK_BYTES_MAX
			      : wire_len * WBG_NRI_UNPACK_FACTOR + WBG_NRI_UNPACK_SLACK;

	*b = (struct unpack_budget){ .a = { .alloc = budget_alloc, .free = budget_free, .allocator_data = b },
				     .left = left };
}

/* A message that did not unpack: over its budget (counted, named) or bad. */
static int undecoded(struct wbg_nri *n, const struct unpack_budget *b, const char *what, size_t wire_len)
{
	if (b->exceeded)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_TOO_BIG,
				 "%s's message of %zu bytes unpacks past its budget (%ux, at most %u MiB)", what, wire_len,
				 WBG_NRI_UNPACK_FACTOR, WBG_NRI_UNPACK_BYTES_MAX >> 20);
	return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL, "%s's message does not decode", what);
}

static int on_runtime_reply(struct wbg_nri *n, const struct nri_message *m, enum nri_event *ret)
{
	Ttrpc__Response *rsp;
	struct unpack_budget b;
	int r = 0;

	if (m->type != NRI_TTRPC_RESPONSE)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL,
				     "a ttrpc message of type %u on the runtime's connection", m->type);
	if (m->stream != REGISTER_STREAM || n->registered)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL, "a reply on stream %u, to no call",
				     m->stream);
	budget_init(&b, m->len);
	rsp = ttrpc__response__unpack(&b.a, m->len, m->data);
	if (!rsp)
		return undecoded(n, &b, "RegisterPlugin's reply", m->len);
	if (rsp->status && rsp->status->code != 0)
		r = stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_REFUSED, "the runtime refused the registration: %.120s",
				  rsp->status->message ? rsp->status->message : "");
	ttrpc__response__free_unpacked(rsp, &b.a);
	if (r < 0)
		return r;
	n->registered = true;
	*ret = NRI_EV_REGISTERED;
	return 0;
}

static int out_of_order(struct wbg_nri *n, const char *method)
{
	return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL, "%s while %s", method,
			     nri_phase_to_string(n->phase));
}

static int configure(struct wbg_nri *n, uint32_t stream, const ProtobufCBinaryData *p, enum nri_event *ret)
{
	Nri__Pkg__Api__V1alpha1__ConfigureRequest *req;
	struct unpack_budget b;
	Nri__Pkg__Api__V1alpha1__ConfigureResponse rsp = NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;
	int r;

	if (!allowed(n, NRI_EV_CONFIGURE))
		return out_of_order(n, "Configure");
	budget_init(&b, p->len);
	req = nri__pkg__api__v1alpha1__configure_request__unpack(&b.a, p->len, p->data);
	if (!req)
		return undecoded(n, &b, "Configure", p->len);
	snprintf(n->runtime, sizeof(n->runtime), "%.64s %.64s", req->runtime_name ? req->runtime_name : "",
		 req->runtime_version ? req->runtime_version : "");
	log_info("NRI: configured by %s (NRI %s), events 0x%x", n->runtime,
		 req->nri_version && *req->nri_version ? req->nri_version : "v0.8 or older", WBG_NRI_EVENT_MASK);
	nri__pkg__api__v1alpha1__configure_request__free_unpacked(req, &b.a);
	rsp.events = WBG_NRI_EVENT_MASK;
	r = answer(n, stream, &rsp.base, 0, NULL);
	if (r < 0)
		return r;
	n->stats.events[WBG_NRI_CONFIGURE]++;
	*ret = NRI_EV_CONFIGURE;
	return 0;
}

static void report(struct wbg_nri *n, const struct wbg_nri_container *c)
{
	if (n->ops->container)
		n->ops->container(n->userdata, c);
}

static void note_pod(struct wbg_nri *n, const NriPod *p)
{
	int r = nri_pods_note(&n->pods, p);

	if (r == -ENOSPC && !(n->stats.errors[WBG_NRI_ERR_TABLE_FULL]++ & 1023))
		log_warning("NRI: more than %u pods: pod %.80s not remembered (its containers lose their names at "
			    "synchronization)", WBG_NRI_PODS_MAX, p->id ? p->id : "");
	else if (r == -ENOMEM)
		log_oom();
}

static void sync_container(const NriContainer *c, const struct nri_pod *pod, void *userdata)
{
	struct wbg_nri *n = userdata;
	struct wbg_nri_container rc;

	nri_container_report(c, NULL, pod, &rc);
	rc.synchronizing = true;
	report(n, &rc);
	n->sync_containers++;
}

static int read_varint(const ProtobufCBinaryData *p, size_t *off, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *off < p->len && shift < 64; shift += 7) {
		uint8_t b = p->data[(*off)++];

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* How many pods and containers a Synchronize holds, from its top-level
 * fields alone, before protobuf-c unpacks it: an entry of 2 bytes on the
 * wire is a struct of a hundred unpacked. -EBADMSG if it does not parse. */
static int count_entries(const ProtobufCBinaryData *p, size_t *ret)
{
	size_t off = 0, n = 0;

	while (off < p->len) {
		uint64_t key, len;

		if (read_varint(p, &off, &key) < 0)
			return -EBADMSG;
		switch (key & 7) {
		case 0: /* varint */
			if (read_varint(p, &off, &len) < 0)
				return -EBADMSG;
			len = 0;
			break;
		case 1: /* 64-bit */
			len = 8;
			break;
		case 2: /* length-delimited: pods (1), containers (2) */
			if (read_varint(p, &off, &len) < 0)
				return -EBADMSG;
			break;
		case 5: /* 32-bit */
			len = 4;
			break;
		default:
			return -EBADMSG;
		}
		if (len > p->len - off)
			return -EBADMSG;
		off += len;
		if ((key >> 3) == 1 || (key >> 3) == 2)
			n++;
	}
	*ret = n;
	return 0;
}

static int synchronize(struct wbg_nri *n, uint32_t stream, const ProtobufCBinaryData *p, enum nri_event *ret)
{
	size_t entries = 0;
	Nri__Pkg__Api__V1alpha1__SynchronizeRequest *req;
	struct unpack_budget b;
	Nri__Pkg__Api__V1alpha1__SynchronizeResponse rsp = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_RESPONSE__INIT;
	enum nri_event ev;
	int r;

	if (count_entries(p, &entries) < 0)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL, "Synchronize's message does not decode");
	if (entries > WBG_NRI_SYNC_ENTRIES_MAX)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL,
				 "a Synchronize part of %zu pods and containers (at most %u)", entries,
				 WBG_NRI_SYNC_ENTRIES_MAX);
	budget_init(&b, p->len);
	req = nri__pkg__api__v1alpha1__synchronize_request__unpack(&b.a, p->len, p->data);
	if (!req)
		return undecoded(n, &b, "Synchronize", p->len);
	ev = req->more ? NRI_EV_SYNC_PART : NRI_EV_SYNC_LAST;
	if (!allowed(n, ev)) {
		nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(req, &b.a);
		return out_of_order(n, "Synchronize");
	}
	for (size_t i = 0; i < req->n_pods; i++) {
		struct wbg_nri_container rc;

		note_pod(n, req->pods[i]);
		nri_sandbox_report(req->pods[i], &rc);
		rc.synchronizing = true;
		report(n, &rc);
		n->sync_pods++;
	}
	for (size_t i = 0; i < req->n_containers; i++) {
		const NriContainer *c = req->containers[i];
		const struct nri_pod *pod = nri_pods_find(&n->pods, c->pod_sandbox_id);

		if (!pod && req->more) {
			r = nri_pods_defer(&n->pods, c);
			if (r == 0)
				continue;
			if (r == -ENOSPC && !(n->stats.errors[WBG_NRI_ERR_TABLE_FULL]++ & 1023))
				log_warning("NRI: more than %u containers wait for their pods: %.80s reported without its "
					    "pod's names", WBG_NRI_DEFERRED_MAX, c->id ? c->id : "");
		}
		sync_container(c, pod, n);
	}
	if (!req->more) {
		/* every container has had its pod's part: the table's work is
		 * done (events carry their pods) */
		nri_pods_flush_deferred(&n->pods, sync_container, n);
		nri_pods_clear(&n->pods);
	}
	rsp.more = req->more;
	nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(req, &b.a);
	r = answer(n, stream, &rsp.base, 0, NULL);
	if (r < 0)
		return r;
	n->stats.events[WBG_NRI_SYNCHRONIZE]++;
	*ret = ev;
	return 0;
}

/* One of the four events, from its own RPC or a StateChange. */
static void event(struct wbg_nri *n, int kind, const NriPod *pod, const NriContainer *c)
{
	struct wbg_nri_container rc;
	const char *path;

	switch (kind) {
	case EVENT_RUN_POD_SANDBOX:
		n->stats.events[WBG_NRI_RUN_POD_SANDBOX]++;
		if (!pod)
			return;
		nri_sandbox_report(pod, &rc);
		report(n, &rc);
		return;
	case EVENT_REMOVE_POD_SANDBOX:
		n->stats.events[WBG_NRI_REMOVE_POD_SANDBOX]++;
		if (!pod || !pod->id)
			return;
		path = pod->linux && pod->linux->cgroups_path ? pod->linux->cgroups_path : "";
		if (n->ops->removed)
			n->ops->removed(n->userdata, pod->id, path);
		return;
	case EVENT_POST_CREATE_CONTAINER:
		n->stats.events[WBG_NRI_POST_CREATE_CONTAINER]++;
		if (!c)
			return;
		/* an event carries its container's pod */
		nri_container_report(c, pod, NULL, &rc);
		report(n, &rc);
		return;
	case EVENT_REMOVE_CONTAINER:
		n->stats.events[WBG_NRI_REMOVE_CONTAINER]++;
		if (!c || !c->id)
			return;
		path = c->linux && c->linux->cgroups_path ? c->linux->cgroups_path : "";
		if (n->ops->removed)
			n->ops->removed(n->userdata, c->id, path);
		return;
	default:
		/* not subscribed to: a runtime that sends it anyway is answered */
		log_debug("NRI: event %d, not subscribed to, ignored", kind);
	}
}

static int state_change(struct wbg_nri *n, uint32_t stream, const ProtobufCBinaryData *p)
{
	Nri__Pkg__Api__V1alpha1__StateChangeEvent *req;
	struct unpack_budget b;

	if (!allowed(n, NRI_EV_EVENT))
		return out_of_order(n, "StateChange");
	budget_init(&b, p->len);
	req = nri__pkg__api__v1alpha1__state_change_event__unpack(&b.a, p->len, p->data);
	if (!req)
		return undecoded(n, &b, "StateChange", p->len);
	event(n, req->event, req->pod, req->container);
	nri__pkg__api__v1alpha1__state_change_event__free_unpacked(req, &b.a);
	return answer(n, stream, NULL, 0, NULL);
}

static int dedicated(struct wbg_nri *n, uint32_t stream, const char *method, int kind, const ProtobufCBinaryData *p)
{
	PodContainerRequest *req;
	struct unpack_budget b;

	if (!allowed(n, NRI_EV_EVENT))
		return out_of_order(n, method);
	budget_init(&b, p->len);
	req = nri__pkg__api__v1alpha1__pod_container_request__unpack(&b.a, p->len, p->data);
	if (!req)
		return undecoded(n, &b, method, p->len);
	event(n, kind, req->pod, req->container);
	nri__pkg__api__v1alpha1__pod_container_request__free_unpacked(req, &b.a);
	return answer(n, stream, NULL, 0, NULL);
}

static const struct {
	const char *method;
	int kind;
} dedicated_rpcs[] = {
	{ "RunPodSandbox", EVENT_RUN_POD_SANDBOX },
	{ "RemovePodSandbox", EVENT_REMOVE_POD_SANDBOX },
	{ "PostCreateContainer", EVENT_POST_CREATE_CONTAINER },
	{ "RemoveContainer", EVENT_REMOVE_CONTAINER },
};

static int dispatch(struct wbg_nri *n, uint32_t stream, const Ttrpc__Request *req, enum nri_event *ret)
{
	char why[160];

	if (strcmp(req->service, WBG_NRI_SERVICE_PLUGIN) == 0) {
		if (strcmp(req->method, "Configure") == 0)
			return configure(n, stream, &req->payload, ret);
		if (strcmp(req->method, "Synchronize") == 0)
			return synchronize(n, stream, &req->payload, ret);
		if (strcmp(req->method, "StateChange") == 0)
			return state_change(n, stream, &req->payload);
		if (strcmp(req->method, "Shutdown") == 0) {
			int r = answer(n, stream, NULL, 0, NULL);

			return r < 0 ? r : stop_feed(n, PENDING_SHUTDOWN, WBG_NRI_ERR_HANGUP, "shutdown");
		}
		for (size_t i = 0; i < ELEMENTSOF(dedicated_rpcs); i++)
			if (strcmp(req->method, dedicated_rpcs[i].method) == 0)
				return dedicated(n, stream, req->method, dedicated_rpcs[i].kind, &req->payload);
	}
	/* Everything else (the adjusting calls, a newer NRI's): the runtime
	 * falls back or goes on without wbguardd. */
	n->stats.events[WBG_NRI_UNIMPLEMENTED]++;
	log_debug("NRI: %.80s/%.80s: not served", req->service, req->method);
	snprintf(why, sizeof(why), "wbguard does not serve %.60s", req->method);
	return answer(n, stream, NULL, RPC_UNIMPLEMENTED, why);
}

static int on_request(struct wbg_nri *n, const struct nri_message *m, enum nri_event *ret)
{
	struct unpack_budget b;
	Ttrpc__Request *req;
	int r;

	budget_init(&b, m->len);
	req = ttrpc__request__unpack(&b.a, m->len, m->data);
	if (!req)
		return undecoded(n, &b, "a ttrpc request", m->len);
	r = dispatch(n, m->stream, req, ret);
	ttrpc__request__free_unpacked(req, &b.a);
	if (r == -ENOBUFS || r == -EMSGSIZE)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_WRITE, "the runtime does not read its answers");
	return r;
}

int nri_on_message(struct wbg_nri *n, const struct nri_message *m, enum nri_event *ret)
{
	if (m->conn == NRI_CONN_RUNTIME)
		return on_runtime_reply(n, m, ret);
	if (m->type != NRI_TTRPC_REQUEST)
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL, "a ttrpc message of type %u from the runtime",
				 m->type);
	if (!(m->stream & 1))
		return stop_feed(n, PENDING_BROKEN, WBG_NRI_ERR_PROTOCOL, "a request on even stream %u", m->stream);
	return on_request(n, m, ret);
}
