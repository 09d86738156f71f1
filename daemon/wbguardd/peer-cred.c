/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdatomic.h>
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

#include "wbg-base.h"
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
	/* copies, not casts: the storage is only as typed as getsockname()
	 * left it */
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in a;

		memcpy(&a, ss, sizeof(a));
		out[0] = a.sin_addr.s_addr;
		*port = a.sin_port;
	} else {
		struct sockaddr_in6 a;

		memcpy(&a, ss, sizeof(a));
		memcpy(out, &a.sin6_addr, 16);
		*port = a.sin6_port;
	}
}

static int ends(int fd, struct sockaddr_storage *local, struct sockaddr_storage *peer)
{
	socklen_t ll = sizeof(*local), pl = sizeof(*peer);

	if (getsockname(fd, (struct sockaddr *)local, &ll) < 0 || getpeername(fd, (struct sockaddr *)peer, &pl) < 0)
		return -errno;
	if (local->ss_family != peer->ss_family || (local->ss_family != AF_INET && local->ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	return 0;
}

static int sock_diag_uid(const struct sockaddr_storage *local, const struct sockaddr_storage *peer, uid_t *ret_uid)
{
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	struct inet_diag_req_v2 req = {
		.sdiag_family = local->ss_family,
		.sdiag_protocol = IPPROTO_TCP,
		.idiag_states = ~0U,
		.id.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
	};
	struct found f = { 0 };
	int r;

	/* the peer's socket: its own end is our peer, its far end is us */
	put_addr(peer, req.id.idiag_src, &req.id.idiag_sport);
	put_addr(local, req.id.idiag_dst, &req.id.idiag_dport);
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
	/* not found, or no inet_diag in this kernel: both answer ENOENT */
	if (!f.found)
		return r == -NLE_OBJ_NOTFOUND || r >= 0 ? -ENOENT : -EIO;
	*ret_uid = f.uid;
	return 0;
}

/* An address as proc's tcp tables print it: each 32-bit word as the host
 * reads it, in hex, then the port. */
static void proc_addr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	__be32 a[4] = { 0 };
	__be16 port;

	put_addr(ss, a, &port);
	if (ss->ss_family == AF_INET)
		snprintf(buf, size, "%08X:%04X", (unsigned)a[0], (unsigned)ntohs(port));
	else
		snprintf(buf, size, "%08X%08X%08X%08X:%04X", (unsigned)a[0], (unsigned)a[1], (unsigned)a[2],
			 (unsigned)a[3], (unsigned)ntohs(port));
}

static int procfs_uid(const char *proc, const struct sockaddr_storage *local, const struct sockaddr_storage *peer,
		      uid_t *ret_uid)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[4096], want_local[64], want_rem[64], line[512];

	snprintf(path, sizeof(path), "%s/net/%s", proc, local->ss_family == AF_INET ? "tcp" : "tcp6");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* the peer's socket's line: local = our peer, remote = us */
	proc_addr(peer, want_local, sizeof(want_local));
	proc_addr(local, want_rem, sizeof(want_rem));
	while (fgets(line, sizeof(line), f)) {
		char l[64], rem[64];
		unsigned st, uid;

		if (sscanf(line, " %*u: %63s %63s %x %*s %*s %*s %u", l, rem, &st, &uid) == 4 &&
		    strcmp(l, want_local) == 0 && strcmp(rem, want_rem) == 0) {
			*ret_uid = (uid_t)uid;
			return 0;
		}
	}
	return -ENOENT;
}

int tcp_peer_uid_procfs(const char *proc, int fd, uid_t *ret_uid)
{
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	int r = ends(fd, &local, &peer);

	return r < 0 ? r : procfs_uid(proc, &local, &peer, ret_uid);
}

/* Whether this kernel's inet_diag has found a socket yet, or has missed
 * one proc's table has (none in this kernel: a module that cannot load,
 * and every request would make the kernel run modprobe again, a process
 * per connection). Read and written by the metrics loop and the probes'
 * thread. */
static atomic_bool diag_answers, diag_missing;
static int (*diag_lookup)(const struct sockaddr_storage *local, const struct sockaddr_storage *peer,
			  uid_t *ret_uid) = sock_diag_uid;

void tcp_peer_uid_set_diag(int (*diag)(const struct sockaddr_storage *local, const struct sockaddr_storage *peer,
				       uid_t *ret_uid))
{
	diag_lookup = diag ? diag : sock_diag_uid;
	atomic_store(&diag_answers, false);
	atomic_store(&diag_missing, false);
}

int tcp_peer_uid(int fd, uid_t *ret_uid)
{
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	int r = ends(fd, &local, &peer);

	if (r < 0)
		return r;
	if (atomic_load(&diag_missing))
		return procfs_uid("/proc", &local, &peer, ret_uid);
	r = diag_lookup(&local, &peer, ret_uid);
	if (r == 0) {
		atomic_store(&diag_answers, true);
		return 0;
	}
	/* a kernel without inet_diag answers every lookup with ENOENT:
	 * proc's table tells a remote peer from a missing module. Once
	 * inet_diag has answered, ENOENT is a remote peer: no read of every
	 * TCP socket's line for each remote request. */
	if (atomic_load(&diag_answers))
		return r;
	r = procfs_uid("/proc", &local, &peer, ret_uid);
	/* proc has it, inet_diag not: none here. Said once, for each later
	 * connection then reads every TCP socket's line (the kernel prints
	 * them: about 4 us each), and a local user who keeps thousands in
	 * TIME_WAIT slows every probe's turn in the listening queue. */
	if (r == 0 && !atomic_exchange(&diag_missing, true))
		log_warning("This kernel has no inet_diag (CONFIG_INET_DIAG, module tcp_diag): each metrics "
			    "connection's owner is read from /proc/net/tcp, a cost that grows with the node's TCP "
			    "sockets; load tcp_diag so that a local user's connections cannot delay the probes");
	return r;
}
