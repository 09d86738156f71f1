/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who is at the other end of a TCP connection accepted here: the owner of
 * the peer's socket, asked of the kernel (NETLINK_SOCK_DIAG, as ss -e
 * does), so that a loopback endpoint can answer only the scraper's user,
 * not every local user and hostNetwork pod. */
#pragma once

#include <sys/types.h>

/* fd: a connected TCP socket (IPv4 or IPv6). -ENOENT when the peer's
 * socket is not in this network namespace (a remote peer). Where the
 * kernel has no inet_diag (CONFIG_INET_DIAG off), the same answer from
 * proc's tcp tables, a read of every TCP socket's line: slower, only then. */
int tcp_peer_uid(int fd, uid_t *ret_uid);
/* For tests: the inet_diag lookup tcp_peer_uid() asks first (NULL: the
 * kernel's), what it learnt of this kernel forgotten. */
struct sockaddr_storage;
void tcp_peer_uid_set_diag(int (*diag)(const struct sockaddr_storage *local, const struct sockaddr_storage *peer,
				       uid_t *ret_uid));
/* That second way alone, from proc (a /proc, for tests). */
int tcp_peer_uid_procfs(const char *proc, int fd, uid_t *ret_uid);
