/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a runtime sends an NRI plugin. The first byte picks: even, the wire
 * alone (frames, ttrpc, then every message type wbguard decodes, on each
 * payload); odd, the whole plugin on a socketpair, connected and
 * registered (the runtime's reply first when bit 1 is set), its answers
 * read back, its phase stepped by whatever the bytes say, ending with a
 * hangup. Neither may crash, leak or stall: the plugin's reads are
 * bounded per turn. */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "wbg-runtime.h"
#include "nri.pb-c.h"
#include "ttrpc.pb-c.h"

static const ProtobufCMessageDescriptor *const descriptors[] = {
	&nri__pkg__api__v1alpha1__configure_request__descriptor,
	&nri__pkg__api__v1alpha1__synchronize_request__descriptor,
	&nri__pkg__api__v1alpha1__state_change_event__descriptor,
	&nri__pkg__api__v1alpha1__pod_container_request__descriptor,
	&nri__pkg__api__v1alpha1__register_plugin_request__descriptor,
};

static int decode(const struct nri_message *m, void *userdata)
{
	Ttrpc__Request *req = ttrpc__request__unpack(NULL, m->len, m->data);
	Ttrpc__Response *rsp = ttrpc__response__unpack(NULL, m->len, m->data);

	for (size_t i = 0; req && i < ELEMENTSOF(descriptors); i++)
		protobuf_c_message_free_unpacked(
			protobuf_c_message_unpack(descriptors[i], NULL, req->payload.len, req->payload.data), NULL);
	ttrpc__request__free_unpacked(req, NULL);
	ttrpc__response__free_unpacked(rsp, NULL);
	return 0;
}

static int peer = -1;
static uint64_t now = 1;

static uint64_t op_now(void *u)
{
	return now;
}

static int op_connect(void *u, int *ret_fd)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	peer = sv[1];
	*ret_fd = sv[0];
	return 0;
}

static void op_container(void *u, const struct wbg_nri_container *c)
{
	/* what the daemon does with it first */
	char rel[4096];

	(void)oci_cgroup_path(c->cgroups_path, rel, sizeof(rel));
}

static const struct wbg_nri_ops ops = { .now = op_now, .connect = op_connect, .container = op_container };

static void drain(void)
{
	uint8_t buf[65536];

	while (read(peer, buf, sizeof(buf)) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wbg_nri_params params = { .plugin_name = "wbguard", .plugin_index = "50" };
	struct wbg_nri *n;
	struct nri_wire w;

	if (size < 1 || size > 65536)
		return 0;
	if (!(data[0] & 1)) {
		nri_wire_init(&w);
		(void)nri_wire_feed(&w, data + 1, size - 1, decode, NULL);
		nri_wire_done(&w);
		return 0;
	}
	log_set_max_level(LOG_CRIT);
	if (nri_new(&params, &ops, NULL, &n) < 0)
		return 0;
	nri_start(n);
	nri_timer(n); /* connects: RegisterPlugin written */
	drain();
	if (data[0] & 2) {
		/* RegisterPlugin's OK: an empty response on connection 2, stream 1 */
		static const uint8_t ok[] = { 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0 };

		(void)!write(peer, ok, sizeof(ok));
		nri_io(n, EPOLLIN);
	}
	for (size_t off = 1; off < size && nri_fd(n) >= 0;) {
		size_t chunk = size - off < 4096 ? size - off : 4096;
		ssize_t k = write(peer, data + off, chunk);

		if (k <= 0)
			break;
		off += (size_t)k;
		nri_io(n, EPOLLIN);
		drain();
	}
	close(peer);
	peer = -1;
	nri_io(n, EPOLLIN | EPOLLHUP);
	now += 60000000;
	nri_timer(n); /* reconnects: a new peer */
	if (peer >= 0)
		close(peer);
	peer = -1;
	nri_free(n);
	return 0;
}
