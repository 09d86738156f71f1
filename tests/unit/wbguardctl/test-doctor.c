/* SPDX-License-Identifier: GPL-2.0-or-later */
/* doctor's configuration rows in a temporary tree: a "node" below
 * host_root, as the DaemonSet's pod sees it through /proc/1/root, and a
 * "pod" beside it. The runtime state directories are the configured ones,
 * the hook file is the package's path below host_root: the node's, not
 * the image's (issue 35, item 4). No wbguardd runs: its row fails. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "doctor.h"
#include "wbguardctl-api.h"
#include "tap.h"

static char tmp[] = "/tmp/wbg-doctor-XXXXXX";

static void put(const char *rel, const char *text)
{
	char p[4096], cmd[4200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	if (system(cmd) != 0 || !(f = fopen(p, "w")))
		abort();
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", tmp, rel);
	if (system(cmd) != 0)
		abort();
}

/* doctor --json with this configuration file; its rows by name. */
static struct json_object *run(const char *config, const char *hooks_file)
{
	char conf[4096], out[4096], proc[4096];
	struct ctl_opts co = { .json = true, .timeout = 1 };
	char sock[4096];
	int saved, fd;

	snprintf(conf, sizeof(conf), "%s/%s", tmp, config);
	snprintf(out, sizeof(out), "%s/out.json", tmp);
	snprintf(proc, sizeof(proc), "%s/proc", tmp);
	snprintf(sock, sizeof(sock), "%s/no-control", tmp);
	co.socket = sock;
	fflush(stdout);
	saved = dup(1);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (saved < 0 || fd < 0 || dup2(fd, 1) < 0)
		abort();
	close(fd);
	(void)doctor(&co, &(struct doctor_paths){ .config = conf, .hooks_file = hooks_file, .proc = proc });
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	return json_object_from_file(out);
}

static struct json_object *row(struct json_object *o, const char *name)
{
	struct json_object *checks, *c, *v;

	if (!o || !json_object_object_get_ex(o, "checks", &checks))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(checks); i++) {
		c = json_object_array_get_idx(checks, i);
		if (json_object_object_get_ex(c, "check", &v) && strcmp(json_object_get_string(v), name) == 0)
			return c;
	}
	return NULL;
}

static const char *field(struct json_object *o, const char *name, const char *key)
{
	struct json_object *v, *c = row(o, name);

	return c && json_object_object_get_ex(c, key, &v) ? json_object_get_string(v) : "";
}

int main(void)
{
	struct json_object *o;
	char text[4096], hook[512], node_hook[4096];

	if (!mkdtemp(tmp))
		return 1;
	dir("proc");
	dir("node/run/crun");
	dir("pod/run/crun"); /* the image's own: must not count */
	snprintf(hook, sizeof(hook), "node%s", WBG_OCI_HOOKS_FILE);
	put(hook, "{}\n");
	snprintf(node_hook, sizeof(node_hook), "%s/%s", tmp, hook);

	/* the DaemonSet's layout: host_root, the runtime dirs below it */
	snprintf(text, sizeof(text),
		 "[daemon]\nhost_root = %s/node\ncgroup_root = %s/node/sys/fs/cgroup\nstate_dir = %s/state\n"
		 "[expiry]\nruntime_state_dirs = %s/node/run/containerd/runc/k8s.io %s/node/run/crun\n",
		 tmp, tmp, tmp, tmp, tmp);
	put("ds.conf", text);
	o = run("ds.conf", NULL);
	CHECK(o && strcmp(field(o, "configuration", "result"), "ok") == 0 &&
		      strstr(field(o, "configuration", "detail"), "/node"),
	      "the configuration read, naming host_root: %s", field(o, "configuration", "detail"));
	CHECK(strcmp(field(o, "runtime state", "result"), "ok") == 0 &&
		      strstr(field(o, "runtime state", "detail"), "1 of 2"),
	      "runtime state: the configured directories, one present on the node: %s",
	      field(o, "runtime state", "detail"));
	CHECK(strcmp(field(o, "OCI hook file", "result"), "ok") == 0 &&
		      strstr(field(o, "OCI hook file", "detail"), node_hook),
	      "OCI hook file: the package's path below host_root: %s", field(o, "OCI hook file", "detail"));
	CHECK(strcmp(field(o, "cgroup v2", "result"), "fail") == 0 &&
		      strstr(field(o, "cgroup v2", "detail"), "/node/sys/fs/cgroup"),
	      "cgroup: the configuration's cgroup_root: %s", field(o, "cgroup v2", "detail"));
	CHECK(strstr(field(o, "one agent", "detail"), "/state/"), "one agent: the configuration's state_dir: %s",
	      field(o, "one agent", "detail"));
	json_object_put(o);

	/* the node without the hook file nor the runtime's state: both warn,
	 * though the pod's tree has them */
	unlink(node_hook);
	snprintf(text, sizeof(text), "%s/node/run/crun", tmp);
	rmdir(text);
	o = run("ds.conf", NULL);
	CHECK(strcmp(field(o, "runtime state", "result"), "warn") == 0,
	      "runtime state: none on the node is a warning: %s", field(o, "runtime state", "detail"));
	CHECK(strcmp(field(o, "OCI hook file", "result"), "warn") == 0 &&
		      strstr(field(o, "OCI hook file", "detail"), node_hook),
	      "OCI hook file: missing on the node is a warning naming its path there");
	json_object_put(o);

	/* host_root set but the runtime dirs left at the pod's paths: said,
	 * with where to put them */
	snprintf(text, sizeof(text), "[daemon]\nhost_root = %s/node\n[expiry]\nruntime_state_dirs = %s/pod/run/crun\n",
		 tmp, tmp);
	put("outside.conf", text);
	o = run("outside.conf", NULL);
	CHECK(strcmp(field(o, "runtime state", "result"), "ok") == 0,
	      "runtime state: a configured directory is read as written (as wbguardd reads it)");
	snprintf(text, sizeof(text), "[daemon]\nhost_root = %s/node\n[expiry]\nruntime_state_dirs = /nonexistent/run/crun\n",
		 tmp);
	put("outside.conf", text);
	json_object_put(o);
	o = run("outside.conf", NULL);
	CHECK(strcmp(field(o, "runtime state", "result"), "warn") == 0 &&
		      strstr(field(o, "runtime state", "next"), "below host_root") &&
		      strstr(field(o, "runtime state", "detail"), "not below host_root"),
	      "runtime state: directories outside host_root are named as the pod's: %s",
	      field(o, "runtime state", "next"));
	json_object_put(o);

	/* an explicit --hooks-file is read as given; a refused configuration
	 * is a warning, the defaults used */
	put("bad.conf", "[daemon]\nmax_depth = many\n");
	snprintf(text, sizeof(text), "%s/pod/hooks.json", tmp);
	put("pod/hooks.json", "{}\n");
	o = run("bad.conf", text);
	CHECK(strcmp(field(o, "configuration", "result"), "warn") == 0, "a refused configuration is a warning");
	CHECK(strcmp(field(o, "OCI hook file", "result"), "ok") == 0 &&
		      strstr(field(o, "OCI hook file", "detail"), text),
	      "--hooks-file is read as given");
	json_object_put(o);

	snprintf(text, sizeof(text), "rm -rf '%s'", tmp);
	if (system(text) != 0)
		return 1;
	return tap_done();
}
