# vm: --kernel stock --disks ext4
# Podman (Debian's podman with crun), as installed: wbguard is installed with
# meson into the guest's root (its hook file lands in
# /usr/share/containers/oci/hooks.d, where Podman and CRI-O look), and a
# container from a locally built image (a busybox rootfs, podman import: no
# registry) runs in a pod. Podman finds the hook through hooks.d alone
# (nothing in the container's configuration names it); the hook registers
# the container with wbguardd at createRuntime, its poststop has wbguardd
# flush it, and the handover's record carries the container's pod names.
# Then in both modes: the same container's `podman run` with the hook and
# without it (an empty --hooks-dir), timed (Podman runs poststop from its
# cleanup process, so this is what a user waits for at run, not all the
# hook's work).
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
# refused), cgroupfs (no systemd), no network (none needed), and a storage
# of its own: the host root's /var/lib/containers may hold a podman
# database of another graph driver (a host that ran podman itself), which
# podman refuses ("database configuration mismatch")
P="podman --root /tmp/wbg-podman/storage --runroot /tmp/wbg-podman/run --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --log-level error"
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
await_record "podman-app\|\"registered_id\":\"$cid\""
rec=$(jq -c --arg id "$cid" 'select(.registered_id == $id)' /run/wbguard/handovers.jsonl | tail -1)
echo "# $rec" | cut -c1-400
check "its handover is recorded with the container's pod, namespace and name" \
	test "$(echo "$rec" | jq -r '"\(.namespace)/\(.pod)/\(.container)"')" = shop/web-0/app
check "and it flushed" test "$(echo "$rec" | jq -r .outcome)" = flushed
$P rm -f app >/dev/null 2>&1
$P pod rm -f web-0 >/dev/null 2>&1
daemon_stop
check "wbguardd stopped cleanly" test "$DAEMON_RC" = 0

mkdir -p /tmp/nohooks
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
for mode in eager on-evidence; do
	WBG_FLUSH_MODE=$mode daemon_start "$WBG_BUILD" --config /tmp/podman.conf
	t=$(date +%s%N)
	$P --hooks-dir /tmp/nohooks run --rm --name plain-$mode --network none -v /mnt/ext4:/data localhost/wbg-busybox:1 \
		sh -c "dd if=/dev/zero of=/data/plain-$mode bs=1M count=24 2>/dev/null" 2>>/wbg-out/podman.log
	plain=$(ms $t)
	t=$(date +%s%N)
	$P run --rm --name hooked-$mode --network none -v /mnt/ext4:/data localhost/wbg-busybox:1 \
		sh -c "dd if=/dev/zero of=/data/hooked-$mode bs=1M count=24 2>/dev/null" 2>>/wbg-out/podman.log
	rc=$?
	hooked=$(ms $t)
	echo "# podman, $mode: run --rm ${plain} ms without the hook, ${hooked} ms with it (+$((hooked - plain)) ms)"
	echo "$mode podman $plain $hooked" >>/wbg-out/hook-added.txt
	check "$mode: a container with the hook runs and exits 0" test $rc = 0
	hid=$(sed -n "s/.*Registered container \([0-9a-f]*\): .*/\1/p" /wbg-out/wbguardd.log | tail -1)
	check "$mode: the hook registered it" test -n "$hid"
	i=0; while ! jq -e --arg id "$hid" 'select(.registered_id == $id)' /run/wbguard/handovers.jsonl >/dev/null 2>&1 &&
		[ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	out=$(jq -r --arg id "$hid" 'select(.registered_id == $id) | .outcome' /run/wbguard/handovers.jsonl | tail -1)
	echo "# $mode: its handover: $out"
	if [ $mode = eager ]; then
		check "eager: its handover flushed" test "$out" = flushed
	else
		# watched until its dying wb drains (or a live cgroup dirties it);
		# clean if the kernel had written it before the container exited
		check "on-evidence: its handover watched, then drained (or clean, or flushed: $out)" \
			sh -c "[ '$out' = drained ] || [ '$out' = clean ] || [ '$out' = flushed ]"
	fi
	daemon_stop
done
