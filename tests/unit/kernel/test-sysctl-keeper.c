/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wbg-base.h"
#include "sysctl-keeper.h"
#include "tap.h"

static char proc[256], state[256], file[300], statefile[300];

static void set_value(const char *v)
{
	FILE *f = fopen(file, "w");

	fputs(v, f);
	fclose(f);
}

static unsigned value(void)
{
	unsigned v = 0;
	FILE *f = fopen(file, "r");

	if (!f || fscanf(f, "%u", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

static int has_state(void)
{
	return access(statefile, F_OK) == 0;
}

int main(void)
{
	char tmp[] = "/tmp/wbg-sysctl.XXXXXX", cmd[700];
	struct wbg_sysctl k;

	log_set_max_level(LOG_EMERG);
	if (!mkdtemp(tmp))
		return 1;
	snprintf(proc, sizeof(proc), "%s/sys", tmp);
	snprintf(state, sizeof(state), "%s/run", tmp);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/vm %s", proc, state);
	if (system(cmd) != 0)
		return 1;
	snprintf(file, sizeof(file), "%s/vm/dirty_expire_centisecs", proc);
	snprintf(statefile, sizeof(statefile), "%s/sysctl.json", state);
	set_value("3000\n");

	CHECK(sysctl_keeper_open(&k, proc, state) == 0 && k.original == 3000 && !k.lowered, "open: the admin's 3000");
	CHECK(sysctl_keeper_hold(&k, "pod-a", 500) == 0 && value() == 500 && k.lowered && has_state(),
	      "a holder lowers it; the state file is written");
	CHECK(sysctl_keeper_hold(&k, "pod-b", 200) == 0 && value() == 200, "the lowest holder wins");
	CHECK(sysctl_keeper_hold(&k, "pod-c", 5000) == 0 && value() == 200, "a higher request changes nothing");
	CHECK(sysctl_keeper_release(&k, "pod-b") == 0 && value() == 500, "its holder gone, the next lowest");
	CHECK(sysctl_keeper_release(&k, "pod-a") == 0 && value() == 3000 && !k.lowered && !has_state(),
	      "nobody below the original: restored, state file gone");
	CHECK(sysctl_keeper_release(&k, "pod-c") == 0 && value() == 3000 && k.changes == 3 && k.restores == 1,
	      "never raised above the admin's value");

	/* A crash while lowered: the next start restores from the state file. */
	CHECK(sysctl_keeper_hold(&k, "boost", 500) == 0 && value() == 500, "lowered again");
	CHECK(sysctl_keeper_open(&k, proc, state) == 0 && value() == 3000 && k.original == 3000 && k.recovered == 1 &&
		      !has_state(),
	      "after a crash the next start restores 3000, not the lowered 500");
	/* Killed between saving the new value and writing it, while already
	 * lowered: the sysctl still has the earlier lowered value, which the
	 * next start must take as ours, not as the admin's. The write is made
	 * to fail (a directory in its place) to stop there. */
	CHECK(sysctl_keeper_hold(&k, "pod-a", 500) == 0 && value() == 500, "lowered to 500");
	unlink(file);
	mkdir(file, 0755);
	CHECK(sysctl_keeper_hold(&k, "pod-b", 1) < 0 && has_state(), "the second write stops after the state file");
	rmdir(file);
	set_value("500\n");
	CHECK(sysctl_keeper_open(&k, proc, state) == 0 && value() == 3000 && k.original == 3000 && !has_state(),
	      "the next start restores 3000, not the 500 in flight (%u)", value());
	/* The admin changed it while wbguardd was down: theirs stays. */
	CHECK(sysctl_keeper_hold(&k, "boost", 500) == 0, "lowered");
	set_value("1000\n");
	CHECK(sysctl_keeper_open(&k, proc, state) == 0 && value() == 1000 && k.original == 1000 && k.admin_changes == 1,
	      "a value changed while wbguardd was down is the admin's: kept");
	/* The admin changes it during a lowered window: adopted, not overwritten. */
	CHECK(sysctl_keeper_hold(&k, "boost", 500) == 0 && value() == 500, "lowered");
	set_value("1500\n");
	CHECK(sysctl_keeper_check(&k) == 1 && k.original == 1500 && !k.lowered && !has_state(), "the change is noticed");
	CHECK(sysctl_keeper_release(&k, "boost") == 0 && value() == 1500, "and not overwritten when the window ends");
	CHECK(sysctl_keeper_hold(&k, "boost", 500) == 0 && value() == 500 && sysctl_keeper_restore(&k) == 0 &&
		      value() == 1500,
	      "restore at exit puts back the adopted value");

	/* The state file cannot be written: the value is not touched. */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
	if (system(cmd) != 0)
		return 1;
	CHECK(sysctl_keeper_open(&k, proc, state) == 0 && sysctl_keeper_hold(&k, "boost", 500) < 0 && value() == 1500 &&
		      k.errors == 1,
	      "no state file, no change (and an error counted)");
	/* The sysctl cannot be written. */
	mkdir(state, 0755);
	unlink(file);
	mkdir(file, 0755); /* writing a directory fails, as a read-only /proc/sys does */
	CHECK(sysctl_keeper_open(&k, proc, state) < 0 && k.last_error < 0, "an unreadable sysctl: a clear error");
	rmdir(file);
	set_value("1500\n");
	CHECK(sysctl_keeper_open(&k, proc, state) == 0, "open");
	unlink(file);
	if (symlink("/proc/version", file) < 0)
		return 1;
	CHECK(sysctl_keeper_hold(&k, "boost", 500) < 0 && k.errors == 1 && !k.lowered && !has_state(),
	      "a write refused: error counted, nothing recorded as lowered, no state file left");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
