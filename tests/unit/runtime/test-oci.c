/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "oci.h"
#include "tap.h"

#define S(x) x, strlen(x)

int main(void)
{
	struct oci_state s;
	struct oci_config c;
	char err[256], p[4096];
	char *huge;

	CHECK(oci_state_parse(S("{\"ociVersion\":\"1.0.2\",\"id\":\"ctr-b\",\"pid\":154,\"status\":\"running\","
				"\"bundle\":\"/tmp/bundle\",\"annotations\":{\"wbguard.io/dirty-expire\":\"2s\"}}"),
			      &s, err, sizeof(err)) == 0 &&
		      strcmp(s.id, "ctr-b") == 0 && s.pid == 154 && strcmp(s.bundle, "/tmp/bundle") == 0 &&
		      strcmp(json_object_get_string(json_object_object_get(s.annotations, "wbguard.io/dirty-expire")),
			     "2s") == 0,
	      "runc's state (as runc 1.1 passes it)");
	oci_state_done(&s);
	CHECK(oci_state_parse(S("{\"id\":\"x\",\"bundle\":\"/b\",\"status\":\"stopped\"}"), &s, err, sizeof(err)) == 0 &&
		      s.pid == 0 && json_object_object_length(s.annotations) == 0,
	      "poststop without pid or annotations");
	oci_state_done(&s);
	CHECK(oci_state_parse(S("{\"bundle\":\"/b\"}"), &s, err, sizeof(err)) == -EINVAL &&
		      strcmp(err, "state: 'id' is missing") == 0,
	      "missing id named: %s", err);
	CHECK(oci_state_parse(S("{\"id\":\"x\",\"bundle\":\"rel/b\"}"), &s, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "'bundle' must be an absolute path"),
	      "relative bundle: %s", err);
	CHECK(oci_state_parse(S("{\"id\":7,\"bundle\":\"/b\"}"), &s, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "'id' must be a string"),
	      "id of the wrong type: %s", err);
	CHECK(oci_state_parse(S("{\"id\":\"a\\nb\",\"bundle\":\"/b\"}"), &s, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "control characters"),
	      "newline in id: %s", err);
	CHECK(oci_state_parse(S("{\"id\":\"a\\u0000b\",\"bundle\":\"/b\"}"), &s, err, sizeof(err)) < 0,
	      "NUL in id: %s", err);
	CHECK(oci_state_parse(S("{\"id\":\"x\",\"bundle\":\"/b\",\"pid\":-1}"), &s, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "'pid'"),
	      "negative pid: %s", err);
	CHECK(oci_state_parse(S("{\"id\":\"x\",\"bundle\":\"/b\",\"annotations\":{\"k\":1}}"), &s, err,
			      sizeof(err)) == -EINVAL &&
		      strstr(err, "annotation 'k' must be a string"),
	      "annotation of the wrong type: %s", err);
	CHECK(oci_state_parse(S("[1,2]"), &s, err, sizeof(err)) == -EINVAL && strstr(err, "not a JSON object"),
	      "not an object: %s", err);
	CHECK(oci_state_parse(S("{\"id\":\"x\""), &s, err, sizeof(err)) == -EINVAL && strstr(err, "not JSON"),
	      "truncated: %s", err);
	huge = malloc(OCI_STATE_MAX + 2);
	memset(huge, ' ', OCI_STATE_MAX + 1);
	huge[OCI_STATE_MAX + 1] = 0;
	CHECK(oci_state_parse(huge, OCI_STATE_MAX + 1, &s, err, sizeof(err)) == -EINVAL && strstr(err, "more than"),
	      "huge input refused before parsing: %s", err);
	free(huge);

	CHECK(oci_config_parse(S("{\"linux\":{\"cgroupsPath\":\"/wbgtest/pod-a\"},\"mounts\":["
				 "{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
				 "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/mnt/ext4/a\",\"options\":[\"rbind\",\"rw\"]},"
				 "{\"destination\":\"/etc/x\",\"source\":\"/etc/x\",\"options\":[\"bind\",\"ro\"]}],"
				 "\"annotations\":{\"a\":\"b\"}}"),
			       &c, err, sizeof(err)) == 0 &&
		      strcmp(c.cgroups_path, "/wbgtest/pod-a") == 0 && c.n_mounts == 3 && c.mounts[1].bind &&
		      c.mounts[1].rw && strcmp(c.mounts[1].source, "/mnt/ext4/a") == 0 && c.mounts[2].bind &&
		      !c.mounts[2].rw && !c.mounts[0].bind,
	      "config: cgroupsPath, bind mounts rw and ro");
	oci_config_done(&c);
	CHECK(oci_config_parse(S("{\"mounts\":[{\"type\":\"bind\"}]}"), &c, err, sizeof(err)) == -EINVAL &&
		      strcmp(err, "config: mounts[0]: 'destination' is missing") == 0,
	      "a mount without destination named: %s", err);
	CHECK(oci_config_parse(S("{\"linux\":[]}"), &c, err, sizeof(err)) == -EINVAL, "linux of the wrong type");

	/* Valid, but beyond the hook's limits: -E2BIG (logged and skipped by
	 * the hook), never -EINVAL (which fails the container's creation). */
	{
		size_t cap = 300 * 80 + 64000, n = 0;
		char *big = malloc(cap);

		n += (size_t)snprintf(big + n, cap - n, "{\"mounts\":[");
		for (int i = 0; i < 300; i++)
			n += (size_t)snprintf(big + n, cap - n, "%s{\"destination\":\"/m%d\",\"type\":\"tmpfs\"}",
					      i ? "," : "", i);
		n += (size_t)snprintf(big + n, cap - n, "]}");
		CHECK(oci_config_parse(big, n, &c, err, sizeof(err)) == -E2BIG && strstr(err, "'mounts': 300"),
		      "300 mounts: beyond the limit, not malformed: %s", err);
		n = (size_t)snprintf(big, cap, "{\"mounts\":[{\"destination\":\"/");
		memset(big + n, 'a', 5000);
		n += 5000;
		n += (size_t)snprintf(big + n, cap - n, "\"}]}");
		CHECK(oci_config_parse(big, n, &c, err, sizeof(err)) == -E2BIG && strstr(err, "too long"),
		      "a 5,000-byte mount path: beyond the limit: %s", err);
		free(big);
	}
	CHECK(oci_config_parse(S("{\"mounts\":[{\"destination\":\"/a\\u001bb\"}]}"), &c, err, sizeof(err)) == -E2BIG &&
		      strstr(err, "control characters"),
	      "a control character in a mount path: beyond the limit: %s", err);
	huge = malloc(OCI_CONFIG_MAX + 2);
	memset(huge, ' ', OCI_CONFIG_MAX + 1);
	huge[OCI_CONFIG_MAX + 1] = 0;
	CHECK(oci_config_parse(huge, OCI_CONFIG_MAX + 1, &c, err, sizeof(err)) == -E2BIG,
	      "a config.json over 4 MiB: beyond the limit: %s", err);
	free(huge);
	CHECK(oci_config_parse(S("{\"root\":{\"path\":\"/var/lib/containers/storage/overlay/x/merged\"}}"), &c, err,
			       sizeof(err)) == 0 &&
		      strcmp(c.root_path, "/var/lib/containers/storage/overlay/x/merged") == 0 && c.cgroups_path[0] == 0,
	      "root.path kept (Podman's and CRI-O's absolute rootfs)");
	oci_config_done(&c);
	CHECK(oci_config_parse(S("{\"root\":\"rootfs\"}"), &c, err, sizeof(err)) == -EINVAL,
	      "root of the wrong type: malformed");

	CHECK(oci_cgroup_path("/wbgtest/pod-a", p, sizeof(p)) == 0 && strcmp(p, "wbgtest/pod-a") == 0, "cgroupfs path");
	CHECK(oci_cgroup_path("kubepods/besteffort/pod1/abc", p, sizeof(p)) == 0 &&
		      strcmp(p, "kubepods/besteffort/pod1/abc") == 0,
	      "relative cgroupfs path");
	CHECK(oci_cgroup_path("kubepods-besteffort-pod12.slice:cri-containerd:abc", p, sizeof(p)) == 0 &&
		      strcmp(p, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12.slice/"
				"cri-containerd-abc.scope") == 0,
	      "systemd driver: slices nested, scope named: %s", p);
	CHECK(oci_cgroup_path("machine.slice:libpod:abc", p, sizeof(p)) == 0 &&
		      strcmp(p, "machine.slice/libpod-abc.scope") == 0,
	      "podman's systemd path: %s", p);
	CHECK(oci_cgroup_path("/a/../../etc", p, sizeof(p)) == -EINVAL, "'..' refused");
	CHECK(oci_cgroup_path("/a/./b", p, sizeof(p)) == -EINVAL, "'.' refused");
	CHECK(oci_cgroup_path("/", p, sizeof(p)) == -EINVAL && oci_cgroup_path("", p, sizeof(p)) == -EINVAL,
	      "the root and empty refused");
	CHECK(oci_cgroup_path("/a\nb", p, sizeof(p)) == -EINVAL, "control characters refused");
	CHECK(oci_cgroup_path("../x.slice:p:n", p, sizeof(p)) == -EINVAL && oci_cgroup_path("a.slice:p:../n", p, sizeof(p)) == -EINVAL,
	      "'..' in a systemd path refused");
	CHECK(oci_cgroup_path("a--b.slice:p:n", p, sizeof(p)) == -EINVAL, "a bad slice name refused");
	CHECK(oci_cgroup_path("/aaaaaaaaaa", p, 8) == -ENAMETOOLONG, "too long for the buffer");
	return tap_done();
}
