/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "macro.h"
#include "peer-cred.h"

struct found {
	bool found;
	uid_t uid;
};

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct found *f = arg;

	if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && nlmsg_datalen(h) >= (int)sizeof(struct inet_diag_msg)) {
		const struct inet_diag_msg *d = nlmsg_data(h);

		f->found = true;
		f->uid = d->idiag_uid;
	}
	return NL_OK;
}

static void nl_socket_freep(struct nl_sock **s)
{
	if (*s)
		nl_socket_free(*s);
}

/* addr into the 4 words inet_diag uses (an IPv4 address in the first). */
static void put_addr(const struct sockaddr_storage *ss, __be32 out[4], __be16 *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		out[0] = a->sin_addr.s_addr;
		*port = a->sin_port;
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		memcpy(out, &a->sin6_addr, 16);
		*port = a->sin6_port;
	}
}

int tcp_peer_uid(int fd, uid_t *ret_uid)
{
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	struct sockaddr_storage local, peer;
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	struct inet_diag_req_v2 req = {
		.sdiag_protocol = IPPROTO_TCP,
		.idiag_states = ~0U,
		.id.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
	};
	struct found f = { 0 };
	int r;

	if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return -errno;
	if (local.ss_family != peer.ss_family || (local.ss_family != AF_INET && local.ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	/* the peer's socket: its own end is our peer, its far end is us */
	req.sdiag_family = local.ss_family;
	put_addr(&peer, req.id.idiag_src, &req.id.idiag_sport);
	put_addr(&local, req.id.idiag_dst, &req.id.idiag_dport);

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, NETLINK_SOCK_DIAG);
	if (r < 0)
		return -EPROTONOSUPPORT;
	r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_msg, &f);
	if (r >= 0)
		r = nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, &req, sizeof(req));
	if (r >= 0)
		r = nl_recvmsgs_default(sk);
	/* not found: the kernel answers with an error (ENOENT) */
	if (!f.found)
		return r == -NLE_OBJ_NOTFOUND || r >= 0 ? -ENOENT : -EIO;
	*ret_uid = f.uid;
	return 0;
}
