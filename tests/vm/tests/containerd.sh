# vm: --kernel stock --disks ext4
# containerd (Debian's 1.6, runc shim v2) driven with ctr, from a local OCI
# image (a busybox rootfs laid out by hand: no registry).
#  1. No hook at all (containerd has no hooks directory): wbguardd sees the
#     container's cgroup go, takes its names from the runc shim's state
#     (<state>/runc/<namespace>/<id>/state.json, the OCI annotations), and
#     flushes.
#  2. The hook in the container's runtime spec (as containerd's CRI puts a
#     base_runtime_spec's hooks into every container's): it registers the
#     container at createRuntime and has wbguardd flush it at poststop.
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/oci.sh"
export WBG_FLUSH_MODE=eager
if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null; then
	skip "containerd: not installed (tests/setup-deps.sh installs Debian's containerd)"
	exit 0
fi
mkdir -p /sys/fs/cgroup/wbgtest && echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control

# The image: one layer (busybox and its applets), its config, manifest and
# index, as an OCI archive.
oci_rootfs /tmp/bbroot
oci_image /tmp/bbroot localhost/wbg-busybox:1 '["sh"]' /tmp/image.tar

# containerd on the guest's overlay root: the native snapshotter (overlay on
# overlay is refused), its own root and state.
cat >/tmp/containerd.toml <<'EOF'
version = 2
root = "/var/lib/containerd-wbg"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  disable = true
EOF
containerd --config /tmp/containerd.toml >/wbg-out/containerd.log 2>&1 &
cd_pid=$!
i=0; while ! ctr version >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
check "containerd runs" sh -c "ctr version >/dev/null"
ctr -n default images import --snapshotter native /tmp/image.tar >/wbg-out/ctr-import.log 2>&1
check "the local image is imported (no registry)" sh -c "ctr -n default images ls -q | grep -qx localhost/wbg-busybox:1"

daemon_start "$WBG_BUILD" --log-level=debug
check "wbguardd starts" test $? = 0
ann="--annotation io.kubernetes.cri.sandbox-name=db-1 --annotation io.kubernetes.cri.sandbox-namespace=store"
# 1. No hook: its names come from the runc shim's state.
ctr -n default run --rm --snapshotter native --cgroup /wbgtest/c1 \
	$ann --annotation io.kubernetes.cri.container-name=pg \
	--mount type=bind,src=/mnt/ext4,dst=/data,options=rbind:rw \
	localhost/wbg-busybox:1 c1 sh -c 'dd if=/dev/zero of=/data/ctr-c1 bs=1M count=16 2>/dev/null; sleep 2' \
	>/wbg-out/ctr-c1.log 2>&1
check "ctr ran the container in /wbgtest/c1 (no hook)" test $? = 0
await_record '"cgroup":"wbgtest/c1"'
rec=$(grep '"cgroup":"wbgtest/c1"' /run/wbguard/handovers.jsonl | tail -1)
echo "# c1: $rec" | cut -c1-400
check "no hook: its removal flushed" test "$(echo "$rec" | jq -r .outcome)" = flushed
check "no hook: its names from the runc shim's state (store/db-1/pg, id c1)" \
	test "$(echo "$rec" | jq -r '"\(.namespace)/\(.pod)/\(.container) \(.registered_id)"')" = "store/db-1/pg c1"
check "no hook: logged as found in its runtime's state" grep -q 'container c1 (runc), from its runtime' /wbg-out/wbguardd.log

# 2. The hook in the container's runtime spec, as a base runtime spec
# (containerd's CRI) would put it there. ctr takes a whole spec (--config)
# with no image: the rootfs is the layer's directory.
ctr oci spec >/tmp/spec-base.json
hook=$WBG_BUILD/hooks/wbguard-oci-hook
jq --arg h "$hook" '
	.hooks = {"createRuntime": [{"path": $h, "args": ["wbguard-oci-hook", "createRuntime", "--timeout", "5"]}],
		  "poststop": [{"path": $h, "args": ["wbguard-oci-hook", "poststop", "--timeout", "5"]}]} |
	.root = {"path": "/tmp/bbroot", "readonly": false} |
	.process.args = ["/bin/sh", "-c", "dd if=/dev/zero of=/data/ctr-c2 bs=1M count=16 2>/dev/null; sleep 1"] |
	.process.terminal = false |
	.linux.cgroupsPath = "/wbgtest/c2" |
	.annotations = {"io.kubernetes.cri.sandbox-name": "db-1", "io.kubernetes.cri.sandbox-namespace": "store",
			"io.kubernetes.cri.container-name": "pg2"} |
	.mounts += [{"destination": "/data", "type": "bind", "source": "/mnt/ext4", "options": ["rbind", "rw"]}]
' /tmp/spec-base.json >/tmp/spec-hook.json
check "a runtime spec with the hook (createRuntime, poststop)" jq -e '.hooks.poststop[0].path' /tmp/spec-hook.json
ctr -n default run --rm --config /tmp/spec-hook.json c2 >/wbg-out/ctr-c2.log 2>&1
check "the hook registered c2 at createRuntime" grep -q 'Registered container c2: cgroup /wbgtest/c2, pod store/db-1' /wbg-out/wbguardd.log
await_record '"cgroup":"wbgtest/c2"'
rec=$(grep '"cgroup":"wbgtest/c2"' /run/wbguard/handovers.jsonl | tail -1)
echo "# c2: $rec" | cut -c1-400
check "with the hook: flushed, recorded with its names" \
	test "$(echo "$rec" | jq -r '"\(.outcome) \(.namespace)/\(.pod)/\(.container)"')" = "flushed store/db-1/pg2"
daemon_stop
kill $cd_pid; wait $cd_pid 2>/dev/null
