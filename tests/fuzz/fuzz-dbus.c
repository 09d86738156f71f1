/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Raw D-Bus on the control socket, against the real wbguardd: a manager
 * started on temporary trees (cgroupfs, state dir, /proc/sys stand-ins; no
 * BPF, no metrics listener), and for each input a root client that
 * authenticates and then writes the input as its message stream: headers,
 * signatures, bodies and their lengths are whatever the fuzzer makes them.
 * The event loop runs until it has nothing left, then the client goes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "fuzz.h"
#include "wbg-base.h"
#include "manager.h"

static char dir[] = "/tmp/wbg-fuzz-dbus-XXXXXX";

static struct manager *m;

static void setup(void)
{
	char p[256], conf[1024];

	fuzz_tmp_dir(dir);
	snprintf(p, sizeof(p), "%s/cg/kubepods.slice/pod1", dir);
	/* its one cgroup is clean: a flush request ends without writing the
	 * host's filesystems on every input */
	snprintf(conf, sizeof(conf),
		 "mkdir -p %s %s/run %s/sys/vm && echo 3000 >%s/sys/vm/dirty_expire_centisecs && "
		 "printf 'file_dirty 0\\nfile_writeback 0\\n' >%s/memory.stat && printf 'populated 1\\n' >%s/cgroup.events",
		 p, dir, dir, dir, p, p);
	if (system(conf) != 0)
		abort();
	snprintf(conf, sizeof(conf),
		 "[daemon]\ncgroup_root = %s/cg\nstate_dir = %s/run\nproc_sys = %s/sys\nlog_level = emerg\n"
		 "[flush]\nscratch_cycle = no\n[bpf]\nenable = no\n[metrics]\nlisten = off\n",
		 dir, dir, dir);
	fuzz_put_file(dir, "wbguard.conf", (const uint8_t *)conf, strlen(conf));
	snprintf(p, sizeof(p), "%s/wbguard.conf", dir);
	if (manager_new(p, NULL, true, &m) < 0 || manager_start(m) < 0)
		abort();
	log_set_max_level(-1);
}

static void run_loop(void)
{
	for (int i = 0; i < 64 && sd_event_run(m->event, 0) > 0; i++)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* uid 0 in hex, and BEGIN pipelined as sd-bus clients do */
	static const char auth[] = "\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (!m)
		setup();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/run/control", dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	run_loop(); /* accepted, a bus made for it */
	if (write(fd, auth, sizeof(auth) - 1) == (ssize_t)(sizeof(auth) - 1) && size)
		(void)!write(fd, data, size);
	shutdown(fd, SHUT_WR);
	run_loop();
	/* drain what it answered, so the next input starts clean */
	{
		char buf[65536];
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		while (poll(&pfd, 1, 0) > 0 && read(fd, buf, sizeof(buf)) > 0)
			;
	}
	close(fd);
	run_loop(); /* its disconnect */
	return 0;
}
