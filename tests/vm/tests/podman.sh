# vm: --kernel stock --disks ext4
# Podman (Debian's podman with crun), as installed: wbguard is installed with
# meson into the guest's root (its hook file lands in
# /usr/share/containers/oci/hooks.d, where Podman and CRI-O look), and a
# container from a locally built image (a busybox rootfs, podman import: no
# registry) runs in a pod. Podman finds the hook through hooks.d alone
# (nothing in the container's configuration names it); the hook registers
# the container with wbguardd at createRuntime, its poststop has wbguardd
# flush it, and the handover's record carries the container's pod names.
. "$WBG_TOP/tests/vm/lib.sh"
export WBG_FLUSH_MODE=eager
if ! command -v podman >/dev/null; then
	skip "podman: not installed (tests/setup-deps.sh installs Debian's podman)"
	exit 0
fi
hooksd=/usr/share/containers/oci/hooks.d
(cd "$WBG_BUILD" && meson install --no-rebuild --quiet >/wbg-out/install.log 2>&1)
check "meson install puts the hook file where Podman reads it" test -s $hooksd/50-wbguard.json
hookpath=$(jq -r .hook.path $hooksd/50-wbguard.json)
check "and the hook it names is installed there ($hookpath)" test -x "$hookpath"
# podman on the guest's overlay root: vfs storage (overlay on overlay is
# refused), cgroupfs (no systemd), no network (none needed)
P="podman --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --log-level error"
mkdir -p /tmp/bb/bin /tmp/bb/data && cp /bin/busybox /tmp/bb/bin/
for a in sh sleep dd sync cat; do ln -sf busybox /tmp/bb/bin/$a; done
tar -C /tmp/bb -cf /tmp/bb.tar .
$P import /tmp/bb.tar localhost/wbg-busybox:1 >/dev/null 2>>/wbg-out/podman.log
check "a local image from a busybox rootfs (podman import)" sh -c "$P image exists localhost/wbg-busybox:1"

cat >/tmp/podman.conf <<'EOF'
[daemon]
roots = machine.slice libpod_parent
EOF
daemon_start "$WBG_BUILD" --config /tmp/podman.conf
check "wbguardd starts" test $? = 0
# no infra container (its pause image would need catatonit): the pod is its cgroup
$P pod create --name web-0 --infra=false >/dev/null 2>>/wbg-out/podman.log
# CRI-O sets the pod's names as these annotations; here podman passes them
$P run --name app --pod web-0 --network none \
	--annotation io.kubernetes.pod.name=web-0 --annotation io.kubernetes.pod.namespace=shop \
	--annotation io.kubernetes.container.name=app \
	-v /mnt/ext4:/data localhost/wbg-busybox:1 \
	sh -c 'dd if=/dev/zero of=/data/podman-app bs=1M count=16 2>/dev/null; sleep 1' 2>>/wbg-out/podman.log
rc=$?
check "the container ran and exited (rc $rc)" test $rc = 0
cid=$($P inspect --format '{{.Id}}' app 2>/dev/null)
check "the container's config names no hook (Podman found it in hooks.d)" \
	sh -c "! $P inspect app | jq -e '.[0].HostConfig.Hooks // empty | length > 0' >/dev/null 2>&1"
check "the hook registered it at createRuntime" grep -q "Registered container $cid" /wbg-out/wbguardd.log
i=0; while ! grep -q "podman-app\|\"registered_id\":\"$cid\"" /run/wbguard/handovers.jsonl 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
rec=$(jq -c --arg id "$cid" 'select(.registered_id == $id)' /run/wbguard/handovers.jsonl | tail -1)
echo "# $rec" | cut -c1-400
check "its handover is recorded with the container's pod, namespace and name" \
	test "$(echo "$rec" | jq -r '"\(.namespace)/\(.pod)/\(.container)"')" = shop/web-0/app
check "and it flushed" test "$(echo "$rec" | jq -r .outcome)" = flushed
$P rm -f app >/dev/null 2>&1
$P pod rm -f web-0 >/dev/null 2>&1
daemon_stop
check "wbguardd stopped cleanly" test "$DAEMON_RC" = 0
