/* SPDX-License-Identifier: GPL-2.0-or-later */
/* write-textfile DIR: the textfile a running wbguardd writes, through its
 * own code (manager_start, the loop, manager_free's last write by the
 * textfile thread), without root or a cgroup2 mount: the manager runs on
 * stand-in trees under DIR (cgroupfs, state dir, /proc/sys; no BPF, no
 * listener, no bus), as fuzz-dbus starts it. Leaves DIR/prom/wbguard.prom. */
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-event.h>

#include "wbg-base.h"
#include "manager.h"

int main(int argc, char **argv)
{
	char cmd[2048], conf[1024], path[512];
	struct manager *m;
	const char *dir = argv[1];
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "Usage: write-textfile DIR\n");
		return 2;
	}
	/* one clean cgroup, so the rescan has something to track */
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; mkdir -p cg/system.slice/a.service run sys/vm prom && "
		 "echo 3000 >sys/vm/dirty_expire_centisecs && "
		 "printf 'file_dirty 0\\nfile_writeback 0\\n' >cg/system.slice/a.service/memory.stat && "
		 "printf 'populated 1\\n' >cg/system.slice/a.service/cgroup.events",
		 dir);
	if (system(cmd) != 0)
		return 1;
	/* no system bus and no service manager: on a host that has them, a
	 * running wbguardd's bus name and unit are not ours to touch */
	snprintf(path, sizeof(path), "unix:path=%s/no-bus", dir);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", path, 1);
	unsetenv("NOTIFY_SOCKET");
	snprintf(path, sizeof(path), "%s/wbguard.conf", dir);
	snprintf(conf, sizeof(conf),
		 "[daemon]\ncgroup_root = %s/cg\nstate_dir = %s/run\nproc_sys = %s/sys\nlog_level = err\n"
		 "[flush]\nscratch_cycle = no\n[bpf]\nenable = no\n"
		 "[metrics]\nlisten = off\ntextfile = %s/prom/wbguard.prom\n",
		 dir, dir, dir, dir);
	f = fopen(path, "w");
	if (!f || fputs(conf, f) < 0 || fclose(f) != 0)
		return 1;
	if (manager_new(path, NULL, true, &m) < 0)
		return 1;
	if (manager_start(m) < 0) {
		manager_free(m);
		return 1;
	}
	for (int i = 0; i < 64 && sd_event_run(m->event, 0) > 0; i++)
		;
	manager_free(m); /* writes the textfile and waits for its thread */
	return 0;
}
