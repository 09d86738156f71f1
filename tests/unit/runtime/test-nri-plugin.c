/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NRI plugin against a fake runtime over a socketpair: registration,
 * Configure in either order with RegisterPlugin's reply, a split
 * Synchronize, the four events by their own RPCs (NRI v0.12) and as
 * StateChange (v0.8-v0.11), Unimplemented for the rest, Shutdown and the
 * reconnect, the backoff, and every kind of bad input. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "nri-fake-runtime.h"
#include "nri-plugin.h"
#include "tap.h"

typedef Nri__Pkg__Api__V1alpha1__PodSandbox Pod;
typedef Nri__Pkg__Api__V1alpha1__Container Ctr;

struct report {
	char id[64], name[64], pod[64], ns[64], cg[128], expire[32];
	int sandbox, synchronizing;
};

static struct world {
	uint64_t now;
	int connect_error;
	struct fake_rt rt;
	int have_rt;
	struct report rep[64];
	unsigned n_rep;
	char removed[16][64];
	unsigned n_removed;
	unsigned synced, synced_pods, synced_ctrs;
} w;

static uint64_t op_now(void *u)
{
	return w.now;
}

static int op_connect(void *u, int *ret_fd)
{
	int sv[2];

	if (w.connect_error)
		return -w.connect_error;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	if (w.have_rt)
		fake_done(&w.rt);
	fake_init(&w.rt, sv[1]);
	w.have_rt = 1;
	*ret_fd = sv[0];
	return 0;
}

static void op_container(void *u, const struct wbg_nri_container *c)
{
	/* the last 64 kept (a synchronization of thousands passes through) */
	struct report *r = &w.rep[w.n_rep++ % 64];

	snprintf(r->id, sizeof(r->id), "%s", c->id);
	snprintf(r->name, sizeof(r->name), "%s", c->name);
	snprintf(r->pod, sizeof(r->pod), "%s", c->pod);
	snprintf(r->ns, sizeof(r->ns), "%s", c->namespace);
	snprintf(r->cg, sizeof(r->cg), "%s", c->cgroups_path);
	snprintf(r->expire, sizeof(r->expire), "%s", c->dirty_expire ? c->dirty_expire : "-");
	r->sandbox = c->sandbox;
	r->synchronizing = c->synchronizing;
}

static void op_removed(void *u, const char *id, const char *cgroups_path)
{
	if (w.n_removed < 16)
		snprintf(w.removed[w.n_removed++], 64, "%s %s", id, cgroups_path);
}

static void op_synced(void *u, unsigned pods, unsigned ctrs)
{
	w.synced++;
	w.synced_pods = pods;
	w.synced_ctrs = ctrs;
}

static const struct wbg_nri_ops ops = {
	.now = op_now, .connect = op_connect, .container = op_container, .removed = op_removed, .synced = op_synced,
};

static const struct report *find(const char *id)
{
	for (unsigned i = w.n_rep; i > 0 && i + 64 > w.n_rep; i--)
		if (strcmp(w.rep[(i - 1) % 64].id, id) == 0)
			return &w.rep[(i - 1) % 64];
	return NULL;
}

/* The runtime's call and the plugin's turn: the reply, or NULL. */
static const Ttrpc__Response *call(struct wbg_nri *n, const char *method, const ProtobufCMessage *m)
{
	uint32_t stream = fake_call(&w.rt, method, m);

	/* a call bigger than the socket's buffer goes as the plugin reads */
	while (fake_pending(&w.rt) && nri_fd(n) >= 0) {
		nri_io(n, EPOLLIN);
		if (fake_flush(&w.rt) < 0)
			break;
	}
	nri_io(n, EPOLLIN);
	return fake_wait_reply(&w.rt, stream, 0);
}

static int reply_ok(const Ttrpc__Response *r)
{
	return r && (!r->status || r->status->code == 0);
}

static int reply_code(const Ttrpc__Response *r)
{
	return r && r->status ? r->status->code : r ? 0 : -1;
}

/* Connects (the timer due) and answers or not the RegisterPlugin read. */
static int connect_and_register(struct wbg_nri *n, int answer_code)
{
	if (nri_deadline(n) != UINT64_MAX && w.now < nri_deadline(n))
		w.now = nri_deadline(n);
	nri_timer(n);
	if (nri_phase(n) != NRI_REGISTERING)
		return -1;
	fake_pump(&w.rt, 0);
	if (!w.rt.call || strcmp(w.rt.call->method, "RegisterPlugin") != 0)
		return -1;
	if (answer_code >= 0) {
		fake_answer_register(&w.rt, answer_code, "plugin already registered");
		nri_io(n, EPOLLIN);
	}
	return 0;
}

static const Ttrpc__Response *configure(struct wbg_nri *n)
{
	Nri__Pkg__Api__V1alpha1__ConfigureRequest req = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;

	req.runtime_name = (char *)"containerd";
	req.runtime_version = (char *)"2.1.9";
	req.request_timeout = 2000;
	return call(n, "Configure", &req.base);
}

static const Ttrpc__Response *sync_msg(struct wbg_nri *n, Pod **pods, size_t np, Ctr **ctrs, size_t nc, int more)
{
	Nri__Pkg__Api__V1alpha1__SynchronizeRequest req = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;

	req.pods = pods;
	req.n_pods = np;
	req.containers = ctrs;
	req.n_containers = nc;
	req.more = more;
	return call(n, "Synchronize", &req.base);
}

/* A fresh connection up to READY with nothing on the node. */
static int to_ready(struct wbg_nri *n)
{
	w.now += 60000000; /* past any backoff */
	if (connect_and_register(n, 0) < 0 || !reply_ok(configure(n)) || !reply_ok(sync_msg(n, NULL, 0, NULL, 0, 0)))
		return -1;
	return nri_phase(n) == NRI_READY ? 0 : -1;
}

static const Ttrpc__Response *event_rpc(struct wbg_nri *n, const char *method, Pod *p, Ctr *c)
{
	Nri__Pkg__Api__V1alpha1__PodContainerRequest req = NRI__PKG__API__V1ALPHA1__POD_CONTAINER_REQUEST__INIT;

	req.pod = p;
	req.container = c;
	return call(n, method, &req.base);
}

static const Ttrpc__Response *state_change(struct wbg_nri *n, int event, Pod *p, Ctr *c)
{
	Nri__Pkg__Api__V1alpha1__StateChangeEvent req = NRI__PKG__API__V1ALPHA1__STATE_CHANGE_EVENT__INIT;

	req.event = event;
	req.pod = p;
	req.container = c;
	return call(n, "StateChange", &req.base);
}

static uint64_t err(struct wbg_nri *n, enum wbg_nri_error e)
{
	struct wbg_nri_stats st;

	nri_stats(n, &st);
	return st.errors[e];
}

/* The runtime goes away (a test done with its connection). */
static void hangup(struct wbg_nri *n)
{
	fake_done(&w.rt);
	w.have_rt = 0;
	nri_io(n, EPOLLIN | EPOLLHUP);
}

/* Bad input on a connection in phase ready (or registering): the plugin
 * closes it, counts the error, and waits to reconnect. */
static void bad_input(struct wbg_nri *n, const char *what, const void *bytes, size_t len, int ready,
		      enum wbg_nri_error e)
{
	uint64_t before = err(n, e);

	if (ready ? to_ready(n) < 0 : connect_and_register(n, -1) < 0) {
		CHECK(0, "%s: the connection could not be set up", what);
		return;
	}
	fake_send_raw(&w.rt, bytes, len);
	nri_io(n, EPOLLIN);
	fake_pump(&w.rt, 0);
	CHECK(nri_phase(n) == NRI_WAITING && nri_fd(n) < 0 && w.rt.hangup && err(n, e) == before + 1,
	      "%s: closed, counted as %s, waiting", what, nri_error_to_string(e));
}

static size_t frame(uint8_t *buf, uint32_t conn, uint32_t stream, uint8_t type, const void *payload, uint32_t len)
{
	struct nri_out o;
	size_t n;

	nri_out_init(&o, 1 << 20);
	nri_out_message(&o, conn, stream, type, payload, len);
	memcpy(buf, o.buf, o.len);
	n = o.len;
	nri_out_done(&o);
	return n;
}

int main(void)
{
	struct wbg_nri_params params = { .plugin_name = "wbguard", .plugin_index = "50" };
	Nri__Pkg__Api__V1alpha1__RegisterPluginRequest *reg;
	Nri__Pkg__Api__V1alpha1__ConfigureResponse *cfg;
	Nri__Pkg__Api__V1alpha1__SynchronizeResponse *syn;
	const Ttrpc__Response *r;
	struct wbg_nri *n;
	struct wbg_nri_stats st;
	Pod *p1, *p2, *p3;
	Ctr *c1, *c2, *c3;
	uint8_t buf[4096];
	size_t len;

	w.now = 1000000;
	CHECK(nri_new(&params, &ops, NULL, &n) == 0, "new");
	CHECK(nri_phase(n) == NRI_OFF && nri_deadline(n) == UINT64_MAX, "off, no timer");
	nri_start(n);
	CHECK(nri_phase(n) == NRI_WAITING && nri_deadline(n) == w.now, "started: waiting, the timer due at once");

	/* the socket absent: the backoff doubles to its cap */
	w.connect_error = ENOENT;
	{
		uint64_t delays[12], last = w.now;
		int doubling = 1;

		for (int i = 0; i < 12; i++) {
			w.now = nri_deadline(n);
			nri_timer(n);
			delays[i] = nri_deadline(n) - w.now;
			(void)last;
		}
		for (int i = 1; i < 12; i++)
			if (delays[i] != (delays[i - 1] * 2 > WBG_NRI_BACKOFF_MAX_USEC ? WBG_NRI_BACKOFF_MAX_USEC
										: delays[i - 1] * 2))
				doubling = 0;
		CHECK(delays[0] == WBG_NRI_BACKOFF_MIN_USEC && doubling && delays[11] == WBG_NRI_BACKOFF_MAX_USEC,
		      "no runtime: retried after 0.5 s, doubling to 30 s");
		CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_CONNECT) == 12, "each failure counted");
	}
	w.connect_error = 0;

	/* registration */
	w.now = nri_deadline(n);
	CHECK(connect_and_register(n, -1) == 0, "connected: RegisterPlugin sent");
	reg = w.rt.call ? nri__pkg__api__v1alpha1__register_plugin_request__unpack(NULL, w.rt.call->payload.len,
										    w.rt.call->payload.data)
			: NULL;
	CHECK(reg && strcmp(w.rt.call->service, WBG_NRI_SERVICE_RUNTIME) == 0 && strcmp(reg->plugin_name, "wbguard") == 0 &&
		      strcmp(reg->plugin_idx, "50") == 0 && w.rt.call_stream == 1,
	      "RegisterPlugin: the runtime's service, name wbguard, index 50, stream 1");
	nri__pkg__api__v1alpha1__register_plugin_request__free_unpacked(reg, NULL);
	CHECK(nri_deadline(n) == w.now + WBG_NRI_SETUP_USEC, "the setup deadline armed");

	/* Configure before RegisterPlugin's reply (the runtime's two goroutines) */
	r = configure(n);
	cfg = reply_ok(r) ? nri__pkg__api__v1alpha1__configure_response__unpack(NULL, r->payload.len, r->payload.data)
			  : NULL;
	CHECK(cfg && (unsigned)cfg->events == WBG_NRI_EVENT_MASK && cfg->events == 1045,
	      "Configure: subscribed to RunPodSandbox, RemovePodSandbox, PostCreateContainer, RemoveContainer (0x415)");
	nri__pkg__api__v1alpha1__configure_response__free_unpacked(cfg, NULL);
	CHECK(nri_phase(n) == NRI_CONFIGURED && strcmp(nri_runtime(n), "containerd 2.1.9") == 0,
	      "configured by containerd 2.1.9");
	fake_answer_register(&w.rt, 0, NULL);
	nri_io(n, EPOLLIN);
	CHECK(nri_phase(n) == NRI_CONFIGURED && nri_fd(n) >= 0, "the late reply: still configured");

	/* a split synchronization: c1's pod comes in the second part */
	p1 = fake_pod("p1", "web-1", "shop", "/kubepods/pod-1/p1", "2s");
	p2 = fake_pod("p2", "db-0", "store", "/kubepods/pod-2/p2", NULL);
	c1 = fake_container("c1", "p1", "app", "/kubepods/pod-1/c1", NULL);
	c2 = fake_container("c2", "p2", "pg", "/kubepods/pod-2/c2", "500ms");
	{
		Pod *pods1[] = { p2 }, *pods2[] = { p1 };
		Ctr *ctrs1[] = { c1, c2 };

		r = sync_msg(n, pods1, 1, ctrs1, 2, 1);
		syn = reply_ok(r) ? nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, r->payload.len,
											 r->payload.data)
				  : NULL;
		CHECK(syn && syn->more, "the first part: answered more = true (split synchronization handled)");
		nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(syn, NULL);
		CHECK(nri_phase(n) == NRI_SYNCING && find("c2") && !find("c1") && w.synced == 0,
		      "synchronizing: c2 reported, c1 waits for its pod");
		r = sync_msg(n, pods2, 1, NULL, 0, 0);
		syn = reply_ok(r) ? nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, r->payload.len,
											 r->payload.data)
				  : NULL;
		CHECK(syn && !syn->more && syn->base.n_unknown_fields == 0, "the last part: answered, no update");
		nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(syn, NULL);
	}
	CHECK(nri_phase(n) == NRI_READY && nri_deadline(n) == UINT64_MAX, "ready, no timer");
	CHECK(w.synced == 1 && w.synced_pods == 2 && w.synced_ctrs == 2, "synchronized: 2 pods, 2 containers");
	CHECK(find("c1") && strcmp(find("c1")->pod, "web-1") == 0 && strcmp(find("c1")->ns, "shop") == 0 &&
		      strcmp(find("c1")->name, "app") == 0 && strcmp(find("c1")->cg, "/kubepods/pod-1/c1") == 0,
	      "c1 with its pod's names once the pod came");
	CHECK(find("c1") && strcmp(find("c1")->expire, "2s") == 0, "c1's expiry from its pod's annotation (no allow-list)");
	CHECK(find("c2") && strcmp(find("c2")->pod, "db-0") == 0 && strcmp(find("c2")->expire, "500ms") == 0,
	      "c2: its own annotation wins");
	CHECK(find("c1")->synchronizing && find("c2")->synchronizing && find("p1")->synchronizing,
	      "the synchronization's reports say so (logged at debug, not a line each at every reconnect)");
	CHECK(find("p1") && find("p1")->sandbox && strcmp(find("p1")->cg, "/kubepods/pod-1/p1") == 0 &&
		      strcmp(find("p1")->name, "") == 0,
	      "a pod's sandbox: reported as a container of no name");

	/* NRI v0.12: the events' own RPCs */
	p3 = fake_pod("p3", "cache-2", "shop", "/kubepods/pod-3/p3", "1s");
	c3 = fake_container("c3", "p3", "redis", "/kubepods/pod-3/c3", NULL);
	w.n_rep = 0;
	CHECK(reply_ok(event_rpc(n, "RunPodSandbox", p3, NULL)) && find("p3") && find("p3")->sandbox,
	      "v0.12 RunPodSandbox: answered, the sandbox reported");
	r = event_rpc(n, "PostCreateContainer", p3, c3);
	CHECK(reply_ok(r) && r->payload.len == 0 && find("c3") && strcmp(find("c3")->pod, "cache-2") == 0 &&
		      strcmp(find("c3")->expire, "1s") == 0 && !find("c3")->synchronizing,
	      "v0.12 PostCreateContainer: an empty answer, c3 with its pod's names and expiry");
	CHECK(reply_ok(event_rpc(n, "RemoveContainer", p3, c3)) && w.n_removed == 1 &&
		      strcmp(w.removed[0], "c3 /kubepods/pod-3/c3") == 0,
	      "v0.12 RemoveContainer: reported with its cgroups path");
	CHECK(reply_ok(event_rpc(n, "RemovePodSandbox", p3, NULL)) && w.n_removed == 2 &&
		      strcmp(w.removed[1], "p3 /kubepods/pod-3/p3") == 0,
	      "v0.12 RemovePodSandbox: reported");
	/* NRI v0.8-v0.11: the same as StateChange */
	w.n_rep = w.n_removed = 0;
	CHECK(reply_ok(state_change(n, 1, p3, NULL)) && find("p3"), "StateChange RUN_POD_SANDBOX");
	CHECK(reply_ok(state_change(n, 5, p3, c3)) && find("c3") && strcmp(find("c3")->ns, "shop") == 0,
	      "StateChange POST_CREATE_CONTAINER");
	CHECK(reply_ok(state_change(n, 11, p3, c3)) && w.n_removed == 1, "StateChange REMOVE_CONTAINER");
	CHECK(reply_ok(state_change(n, 3, p3, NULL)) && w.n_removed == 2, "StateChange REMOVE_POD_SANDBOX");
	CHECK(reply_ok(state_change(n, 10, p3, c3)) && w.n_removed == 2 && w.n_rep == 2,
	      "StateChange of an event not subscribed to (STOP_CONTAINER): answered, nothing done");
	/* the adjusting calls and the unknown: Unimplemented */
	CHECK(reply_code(event_rpc(n, "CreateContainer", p3, c3)) == 12, "CreateContainer: Unimplemented (no adjustment)");
	CHECK(reply_code(event_rpc(n, "UpdateContainer", p3, c3)) == 12, "UpdateContainer: Unimplemented");
	CHECK(reply_code(event_rpc(n, "ValidateContainerAdjustment", p3, c3)) == 12, "ValidateContainerAdjustment: Unimplemented");
	{
		uint32_t s = fake_call_service(&w.rt, "grpc.health.v1.Health", "Check", NULL);

		nri_io(n, EPOLLIN);
		CHECK(reply_code(fake_wait_reply(&w.rt, s, 0)) == 12, "another service: Unimplemented");
	}
	nri_stats(n, &st);
	CHECK(st.events[WBG_NRI_UNIMPLEMENTED] == 4 && st.events[WBG_NRI_POST_CREATE_CONTAINER] == 2 &&
		      st.events[WBG_NRI_SYNCHRONIZE] == 2 && st.events[WBG_NRI_CONFIGURE] == 1,
	      "events counted by kind");
	CHECK(nri_phase(n) == NRI_READY && !w.rt.bad, "still ready; every frame the plugin wrote parsed");

	/* Shutdown: answered, closed, reconnected after the backoff */
	r = call(n, "Shutdown", NULL);
	fake_pump(&w.rt, 0);
	CHECK(reply_ok(r) && nri_phase(n) == NRI_WAITING && w.rt.hangup, "Shutdown: answered, closed");
	CHECK(nri_deadline(n) == w.now + WBG_NRI_BACKOFF_MIN_USEC, "reconnect after 0.5 s (the backoff started over)");
	w.now = nri_deadline(n);
	w.n_rep = 0;
	CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)), "reconnected and configured");
	{
		Pod *pods[] = { p1, p2 };
		Ctr *ctrs[] = { c1, c2 };

		CHECK(reply_ok(sync_msg(n, pods, 2, ctrs, 2, 0)) && w.synced == 2 && find("c1") && find("c2"),
		      "resynchronized: every container again");
	}
	nri_stats(n, &st);
	CHECK(st.connections == 2, "two connections counted");
	w.now += WBG_NRI_SETUP_USEC * 2;
	nri_timer(n);
	CHECK(nri_phase(n) == NRI_READY, "ready: no deadline to miss");
	/* the runtime's restart: the socket closes */
	fake_done(&w.rt);
	w.have_rt = 0;
	nri_io(n, EPOLLIN | EPOLLHUP);
	CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_HANGUP) == 1, "the runtime gone: waiting, hangup counted");
	w.have_rt = 0;

	/* a frame for another multiplexer connection: skipped, as NRI's own
	 * mux does, the connection kept */
	CHECK(to_ready(n) == 0, "ready for a frame of connection 5");
	len = frame(buf, 5, 1, NRI_TTRPC_REQUEST, "x", 1);
	fake_send_raw(&w.rt, buf, len);
	CHECK(reply_ok(state_change(n, 10, p3, c3)) && nri_phase(n) == NRI_READY,
	      "a frame for connection 5: skipped, the next request answered");
	hangup(n);

	/* bad input, each on a connection of its own */
	{
		uint8_t big[8] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff };

		bad_input(n, "a frame of 4 GiB", big, sizeof(big), 1, WBG_NRI_ERR_PROTOCOL);
	}
	len = frame(buf, 1, 3, NRI_TTRPC_REQUEST, "\xff\xff\xff\xff\xff", 5);
	bad_input(n, "a ttrpc request of garbage", buf, len, 1, WBG_NRI_ERR_PROTOCOL);
	{
		Ttrpc__Request req = TTRPC__REQUEST__INIT;
		uint8_t packed[256];

		req.service = (char *)WBG_NRI_SERVICE_PLUGIN;
		req.method = (char *)"Synchronize";
		req.payload.data = (uint8_t *)"\x0a\xff\xff\xff\x0f";
		req.payload.len = 5;
		len = frame(buf, 1, 3, NRI_TTRPC_REQUEST, packed, ttrpc__request__pack(&req, packed));
		/* in the phase that takes a Synchronize: refused for its bytes */
		CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)) && nri_phase(n) == NRI_CONFIGURED,
		      "configured, for a Synchronize of garbage");
		{
			uint64_t before = err(n, WBG_NRI_ERR_PROTOCOL);

			fake_send_raw(&w.rt, buf, len);
			nri_io(n, EPOLLIN);
			CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_PROTOCOL) == before + 1,
			      "Synchronize's protobuf of garbage, while configured: closed, counted as protocol");
		}
	}
	{
		/* 65,537 empty containers in 131 KiB: refused before protobuf-c
		 * unpacks them (each would be a struct of ~100 bytes) */
		static uint8_t payload[2 * 65537], packed[2 * 65537 + 128];
		Ttrpc__Request req = TTRPC__REQUEST__INIT;

		for (size_t i = 0; i < sizeof(payload); i += 2)
			payload[i] = 0x12, payload[i + 1] = 0;
		req.service = (char *)WBG_NRI_SERVICE_PLUGIN;
		req.method = (char *)"Synchronize";
		req.payload.data = payload;
		req.payload.len = sizeof(payload);
		CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)), "configured, for a huge Synchronize");
		{
			uint64_t before = err(n, WBG_NRI_ERR_PROTOCOL);
			struct nri_out o;

			nri_out_init(&o, 1 << 20);
			nri_out_message(&o, 1, 5, NRI_TTRPC_REQUEST, packed, ttrpc__request__pack(&req, packed));
			/* 132 KiB: within a socketpair's buffer, sent before the
			 * plugin reads */
			fake_send_raw(&w.rt, o.buf, o.len);
			for (int i = 0; i < 8 && nri_fd(n) >= 0; i++)
				nri_io(n, EPOLLIN);
			nri_out_done(&o);
			CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_PROTOCOL) == before + 1,
			      "a Synchronize part of 65,537 entries: refused unpacked, closed");
		}
	}
	{
		/* one pod of 60,000 empty annotations: 120 KiB on the wire, a
		 * struct and a pointer each unpacked (2.9 MiB, 24 times it):
		 * past the budget, refused and counted, nothing kept */
		enum { N = 60000 };
		Pod *p = fake_pod("p-big", "big", "shop", "", NULL);
		Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry *ents = calloc(N, sizeof(*ents)), **v = calloc(N, sizeof(*v));
		Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry **keep = p->annotations;
		size_t keep_n = p->n_annotations;
		uint64_t before = err(n, WBG_NRI_ERR_TOO_BIG);

		for (size_t i = 0; i < N; i++) {
			nri__pkg__api__v1alpha1__pod_sandbox__annotations_entry__init(&ents[i]);
			v[i] = &ents[i];
		}
		p->annotations = v;
		p->n_annotations = N;
		w.n_rep = 0;
		CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)), "configured, for a pod of empty annotations");
		(void)sync_msg(n, &p, 1, NULL, 0, 0);
		CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_TOO_BIG) == before + 1 && !find("p-big"),
		      "a pod of 60,000 empty annotations: past the unpack budget, closed, counted as too_big");
		p->annotations = keep;
		p->n_annotations = keep_n;
		fake_free_pod(p);
		free(ents);
		free(v);
	}
	{
		/* a container whose pod never comes, and a pod table over its
		 * bound: reported without names, counted */
		Pod **pods = calloc(WBG_NRI_PODS_MAX + 1, sizeof(*pods));
		Ctr *orphan = fake_container("c9", "p-none", "lost", "/kubepods/c9", NULL), *ctrs[] = { orphan };
		uint64_t before = err(n, WBG_NRI_ERR_TABLE_FULL);
		char id[32];

		for (size_t i = 0; i <= WBG_NRI_PODS_MAX; i++) {
			snprintf(id, sizeof(id), "pod%zu", i);
			pods[i] = fake_pod(id, id, "many", "", NULL);
		}
		w.n_rep = 0;
		CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)) &&
			      reply_ok(sync_msg(n, NULL, 0, ctrs, 1, 1)) && !find("c9"),
		      "a container whose pod is not yet sent waits");
		CHECK(reply_ok(sync_msg(n, pods, WBG_NRI_PODS_MAX + 1, NULL, 0, 0)) && nri_phase(n) == NRI_READY,
		      "16,385 pods in the last part: answered, ready");
		CHECK(find("c9") && strcmp(find("c9")->pod, "") == 0 && strcmp(find("c9")->name, "lost") == 0,
		      "the container whose pod never came: reported at the last part, without pod names");
		CHECK(err(n, WBG_NRI_ERR_TABLE_FULL) == before + 1, "the pod over the table's bound counted");
		for (size_t i = 0; i <= WBG_NRI_PODS_MAX; i++)
			fake_free_pod(pods[i]);
		free(pods);
		fake_free_container(orphan);
		hangup(n);
	}
	len = frame(buf, 1, 2, NRI_TTRPC_REQUEST, "", 0);
	bad_input(n, "a request on an even stream", buf, len, 1, WBG_NRI_ERR_PROTOCOL);
	len = frame(buf, 1, 3, NRI_TTRPC_DATA, "", 0);
	bad_input(n, "a ttrpc data message", buf, len, 1, WBG_NRI_ERR_PROTOCOL);
	len = frame(buf, 2, 3, NRI_TTRPC_RESPONSE, "", 0);
	bad_input(n, "a reply to no call", buf, len, 1, WBG_NRI_ERR_PROTOCOL);
	/* out of order */
	CHECK(to_ready(n) == 0, "ready again");
	{
		uint64_t before = err(n, WBG_NRI_ERR_PROTOCOL);

		r = configure(n);
		CHECK(!r && nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_PROTOCOL) == before + 1,
		      "a second Configure: closed as out of order");
	}
	CHECK(connect_and_register(n, 0) == 0, "connected again");
	{
		uint64_t before = err(n, WBG_NRI_ERR_PROTOCOL);

		CHECK(!state_change(n, 5, p3, c3) && nri_phase(n) == NRI_WAITING &&
			      err(n, WBG_NRI_ERR_PROTOCOL) == before + 1,
		      "an event before Configure: closed as out of order");
	}
	/* a truncated frame, then the runtime goes */
	CHECK(connect_and_register(n, 0) == 0, "connected for a truncated frame");
	{
		len = frame(buf, 1, 3, NRI_TTRPC_REQUEST, "abcdef", 6);
		fake_send_raw(&w.rt, buf, len - 3);
		nri_io(n, EPOLLIN);
		CHECK(nri_phase(n) == NRI_REGISTERING, "a truncated frame: kept, waiting for the rest");
		shutdown(w.rt.fd, SHUT_WR);
		nri_io(n, EPOLLIN);
		CHECK(nri_phase(n) == NRI_WAITING, "then the runtime closed: waiting");
	}
	/* refused */
	{
		uint64_t before = err(n, WBG_NRI_ERR_REFUSED);

		CHECK(connect_and_register(n, 6) == 0 && nri_phase(n) == NRI_WAITING &&
			      err(n, WBG_NRI_ERR_REFUSED) == before + 1,
		      "RegisterPlugin refused (already exists): closed, counted as refused");
	}
	/* a runtime that never answers */
	CHECK(connect_and_register(n, -1) == 0, "connected to a runtime that will not answer");
	{
		w.now += WBG_NRI_SETUP_USEC - 1;
		nri_timer(n);
		CHECK(nri_phase(n) == NRI_REGISTERING, "9.99 s without Configure: still registering");
		w.now += 1;
		nri_timer(n);
		CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_TIMEOUT) == 1,
		      "10 s: closed, counted as a timeout");
	}
	/* a runtime that sends a part every 9 s does not hold the setup open */
	CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)), "connected for a slow synchronization");
	{
		Pod *pods[] = { p1 };

		w.now += 9000000;
		sync_msg(n, pods, 1, NULL, 0, 1);
		w.now += 1000000;
		nri_timer(n);
		CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_TIMEOUT) == 2,
		      "a part at 9 s, none finished at 10 s: closed (the deadline runs from connect)");
	}
	/* half-way through a split synchronization */
	CHECK(connect_and_register(n, 0) == 0 && reply_ok(configure(n)), "connected, configured");
	{
		Pod *pods[] = { p1 };

		sync_msg(n, pods, 1, NULL, 0, 1);
		w.now += WBG_NRI_SETUP_USEC;
		nri_timer(n);
		CHECK(nri_phase(n) == NRI_WAITING && err(n, WBG_NRI_ERR_TIMEOUT) == 3,
		      "a synchronization that stops half-way: closed after 10 s");
	}
	/* stop */
	nri_stop(n);
	CHECK(nri_phase(n) == NRI_OFF && nri_fd(n) < 0 && nri_deadline(n) == UINT64_MAX, "stopped: off, closed, no timer");

	fake_free_pod(p1);
	fake_free_pod(p2);
	fake_free_pod(p3);
	fake_free_container(c1);
	fake_free_container(c2);
	fake_free_container(c3);
	if (w.have_rt)
		fake_done(&w.rt);
	nri_free(n);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
