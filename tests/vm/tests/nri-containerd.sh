# vm: --kernel stock --disks ext4
# wbguardd speaks NRI (containerd's Node Resource Interface) to a real
# containerd 2.1 (sid's, with NRI v0.8.0: tests/vm/fetch-debian-containerd
# on the host fetches it, tests/setup-deps.sh --lab runs that), driven
# through the CRI API without a kubelet (tests/vm/cri-client): host-network
# pods (no CNI), cgroupfs (pods under /wbgtest), a local pause image of our
# own (tests/vm/pause.c) and busybox, no registry.
#  a. wbguardd connects to containerd's NRI socket and is configured by it;
#  b. a CRI container is registered from NRI with its pod's names;
#  c. its pod's wbguard.io/dirty-expire annotation is taken from NRI, with
#     no pod_annotations allow-list in containerd's runtime (containerd
#     puts no pod annotation into the container's OCI spec);
#  d. its removal through the CRI is recorded with its pod's names;
#  e. a containerd restart while a pod runs: the connection closes,
#     wbguardd connects again and is synchronized with what runs.
#  f-h. units/kubernetes/daemonset.yaml's pod started through the CRI as the
#     kubelet starts it, seccomp RuntimeDefault and all: a container
#     restarted in place, a pod's own expiry (tests/vm/daemonset-cri.sh).
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/oci.sh"
export WBG_FLUSH_MODE=eager
. "$WBG_TOP/tests/vm/containerd-guest.sh"
why=$(containerd_missing)
if [ -n "$why" ]; then
	skip "nri-containerd: $why"
	exit 0
fi
t0=$(cut -d' ' -f1 /proc/uptime)
since() { awk -v t0="$1" '{printf "%.1f", $1 - t0}' /proc/uptime; }
echo "# packages: $(paste -sd' ' "$tree/.packages")"
containerd_config
echo "# runc: $runc ($("$runc" --version 2>&1 | head -1))"
cp /tmp/containerd.toml /wbg-out/
mkdir -p /sys/fs/cgroup/wbgtest && echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control
t=$(cut -d' ' -f1 /proc/uptime)
containerd_start
echo "# containerd up in $(since "$t") s"
ver=$(cri version 2>&1)
check "containerd 2.1 runs, its CRI answers: $ver" sh -c 'echo "$1" | grep -q "^containerd 2\.1.*(CRI v1)"' _ "$ver"
check "containerd's NRI socket /var/run/nri/nri.sock" test -S /var/run/nri/nri.sock

t=$(cut -d' ' -f1 /proc/uptime)
containerd_images
echo "# images built and imported in $(since "$t") s"
check "the CRI lists the local pause and busybox images" \
	sh -c "grep -q 'localhost/wbg-pause:1' /wbg-out/cri-images.txt && grep -q 'localhost/wbg-busybox:1' /wbg-out/cri-images.txt"

cat >/tmp/nri.conf <<'EOF'
[nri]
enable = yes
socket = /var/run/nri/nri.sock
# the admin lets pods here ask for their own expiry
[policy "wbgtest/pod-*"]
allow_annotation = yes
EOF
daemon_start "$WBG_BUILD" --config /tmp/nri.conf
check "wbguardd starts with [nri]" test $? = 0

# pod_json NAME UID [ANNOTATIONS_JSON]: a host-network pod in namespace
# shop, label app=web, in cgroup /wbgtest/pod-UID. No hostname: the host's
# UTS namespace is the pod's (runc refuses to set one there).
pod_json() {
	local ann=${3:-}
	[ -n "$ann" ] || ann='{}'
	mkdir -p "/tmp/pods/$1"
	jq -n --arg n "$1" --arg u "$2" --argjson ann "$ann" '{
		metadata: {name: $n, namespace: "shop", uid: $u, attempt: 0},
		log_directory: ("/tmp/pods/" + $n),
		labels: {app: "web"}, annotations: $ann,
		linux: {cgroup_parent: ("/wbgtest/pod-" + $u),
			security_context: {namespace_options: {network: "NODE", pid: "CONTAINER", ipc: "POD"}}}
	}' >"/tmp/pods/$1.json"
}
# ctr_json POD NAME CMD: a busybox container, /mnt/ext4 at /data.
ctr_json() {
	jq -n --arg n "$2" --arg cmd "$3" '{
		metadata: {name: $n, attempt: 0}, image: {image: "localhost/wbg-busybox:1"},
		command: ["sh", "-c", $cmd], log_path: ($n + ".log"),
		mounts: [{container_path: "/data", host_path: "/mnt/ext4"}],
		labels: {}, annotations: {}, linux: {}
	}' >"/tmp/pods/$1-$2.json"
}
# work POD: a few MiB written to /data/POD, then asleep; it stops at once
# (SIGTERM: sh is PID 1 of its PID namespace, with no default action for it)
work() { echo "trap 'exit 0' TERM; dd if=/dev/zero of=/data/$1 bs=1M count=4 2>/dev/null; sleep 3600 & wait"; }

# The pod web-1 (shop), its container app.
t=$(cut -d' ' -f1 /proc/uptime)
pod_json web-1 uid-web-1 '{"wbguard.io/dirty-expire": "2s"}'
ctr_json web-1 app "$(work web-1)"
ids=$(cri run /tmp/pods/web-1.json /tmp/pods/web-1-app.json 2>>/wbg-out/cri-errors.txt)
pod1=${ids% *} ctr1=${ids#* }
check "CRI: the host-network pod shop/web-1 runs (RunPodSandbox), its container app created and started" test -n "$ids"
echo "# pod and container web-1/app in $(since "$t") s"
cri inspect "$ctr1" , inspectp "$pod1" >/wbg-out/web-1-status.json 2>>/wbg-out/cri-errors.txt
jq -s '.[0]' /wbg-out/web-1-status.json >/wbg-out/ctr1-status.json 2>/dev/null
# the pod sandbox's (pause's) cgroup, beside its container's
echo "# the sandbox's cgroupsPath: $(jq -s -r '.[1].info.info' /wbg-out/web-1-status.json 2>/dev/null | jq -r '.runtimeSpec.linux.cgroupsPath' 2>/dev/null)"
check "CRI: app runs" test "$(jq -r .status.state /wbg-out/ctr1-status.json 2>/dev/null)" = CONTAINER_RUNNING
cg1=$(jq -r '.info.info' /wbg-out/ctr1-status.json 2>/dev/null | jq -r '.runtimeSpec.linux.cgroupsPath // empty' 2>/dev/null)
echo "# the container's cgroupsPath (its OCI spec): $cg1"
check "its cgroup is /wbgtest/pod-uid-web-1/<container id> (cgroupfs)" test "$cg1" = "/wbgtest/pod-uid-web-1/$ctr1"
check "containerd put no pod annotation into its OCI spec (no pod_annotations allow-list)" \
	sh -c "jq -r .info.info /wbg-out/ctr1-status.json | jq -e '.runtimeSpec.annotations | has(\"wbguard.io/dirty-expire\") | not' >/dev/null"

# a. connected and configured
i=0
while ! grep -q "Registered container $ctr1" /wbg-out/wbguardd.log && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
check "a. wbguardd: info: NRI: connected" grep -q '^info: NRI: connected' /wbg-out/wbguardd.log
check "a. wbguardd: NRI: configured by containerd" grep -q 'NRI: configured by containerd' /wbg-out/wbguardd.log
# b. registered from NRI with its pod's names
reg=$(grep "Registered container $ctr1: cgroup /[^,]*, pod shop/web-1" /wbg-out/wbguardd.log | head -1)
echo "# $reg"
check "b. Registered container <id>: cgroup /..., pod shop/web-1, from NRI" sh -c 'echo "$1" | grep -Eq "\((hook\+)?nri\)$"' _ "$reg"
# c. the pod's expiry annotation, which only NRI gave it (the OCI spec has
# none): the expiry's policy for the container's cgroup
i=0
while ! grep -q "${cg1#/}: dirty expiry" /wbg-out/wbguardd.log && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
grep "${cg1#/}: dirty expiry" /wbg-out/wbguardd.log | head -1 | sed 's/^/# /'
check "c. its pod's wbguard.io/dirty-expire=2s taken (no allow-list in containerd)" \
	grep -q "${cg1#/}: dirty expiry 2\.00 s" /wbg-out/wbguardd.log
check "c. the runtime's state never scanned for it (NRI named it)" \
	sh -c "! grep -q 'container $ctr1 (runc), from its runtime' /wbg-out/wbguardd.log"
$WBG_BUILD/daemon/wbguardctl doctor --json --config /tmp/nri.conf >/wbg-out/doctor.json 2>&1
nri_row=$(jq -r '.checks[] | select(.check == "NRI") | "\(.result) \(.detail)"' /wbg-out/doctor.json 2>/dev/null)
echo "# doctor: NRI $nri_row"
check "doctor: NRI ok, registered with containerd 2.1" sh -c 'echo "$1" | grep -q "^ok registered with containerd 2\.1"' _ "$nri_row"

# d. stop and remove it through the CRI: recorded with its pod's names
t=$(cut -d' ' -f1 /proc/uptime)
cri stop "$ctr1" 5 , rm "$ctr1" , ps >/wbg-out/ps-1.txt 2>>/wbg-out/cri-errors.txt
check "CRI: the container is stopped and removed" sh -c "[ $? = 0 ] && [ -n '$ctr1' ] && ! grep -q '^$ctr1 ' /wbg-out/ps-1.txt"
echo "# container stopped and removed in $(since "$t") s"
await_record "\"cgroup\":\"wbgtest/pod-uid-web-1/$ctr1\""
rec=$(grep "\"cgroup\":\"wbgtest/pod-uid-web-1/$ctr1\"" /run/wbguard/handovers.jsonl | tail -1)
echo "# app: $rec" | cut -c1-400
check "d. its removal recorded: pod web-1, namespace shop, container app" \
	test "$(echo "$rec" | jq -r '"\(.namespace)/\(.pod)/\(.container)"' 2>/dev/null)" = "shop/web-1/app"
t=$(cut -d' ' -f1 /proc/uptime)
cri stopp "$pod1" , rmp "$pod1" , pods >/wbg-out/pods-1.txt 2>>/wbg-out/cri-errors.txt
check "CRI: the pod is stopped and removed" sh -c "[ $? = 0 ] && [ -n '$pod1' ] && ! grep -q '^$pod1 ' /wbg-out/pods-1.txt"
echo "# pod stopped and removed in $(since "$t") s"

# e. containerd restarts while web-2 runs
pod_json web-2 uid-web-2
ctr_json web-2 app "$(work web-2)"
ids=$(cri run /tmp/pods/web-2.json /tmp/pods/web-2-app.json 2>>/wbg-out/cri-errors.txt)
pod2=${ids% *} ctr2=${ids#* }
check "CRI: the second pod shop/web-2 and its container run" test -n "$ids"
t=$(cut -d' ' -f1 /proc/uptime)
echo "--- restart" >>/wbg-out/containerd.log
kill -TERM $cd_pid
wait $cd_pid
containerd_start
echo "# containerd restarted in $(since "$t") s"
cri ps >/wbg-out/ps-2.txt 2>>/wbg-out/cri-errors.txt
check "containerd restarted, web-2/app still running" grep -q "^$ctr2 $pod2 app RUNNING" /wbg-out/ps-2.txt
check "the NRI socket is back" test -S /var/run/nri/nri.sock
i=0
while [ "$(grep -c '^info: NRI: connected' /wbg-out/wbguardd.log)" -lt 2 ] && [ $i -lt 40 ]; do sleep 0.5; i=$((i + 1)); done
sleep 0.5
echo "# wbguardd's NRI lines: $(grep -c 'NRI:' /wbg-out/wbguardd.log)"
grep 'NRI:' /wbg-out/wbguardd.log | tail -n 8 | sed 's/^/#   /'
check "e. wbguardd: NRI: connection closed" grep -q 'NRI: connection closed' /wbg-out/wbguardd.log
check "e. wbguardd: NRI: connected again" test "$(grep -c '^info: NRI: connected' /wbg-out/wbguardd.log)" -ge 2
sync_line=$(sed -n '/NRI: connection closed/,$p' /wbg-out/wbguardd.log | grep 'NRI: synchronized:' | tail -1)
pods=$(echo "$sync_line" | sed -n 's/.*NRI: synchronized:.* \([0-9][0-9]*\) pods\{0,1\}.*/\1/p')
ctrs=$(echo "$sync_line" | sed -n 's/.*NRI: synchronized:.* \([0-9][0-9]*\) containers\{0,1\}.*/\1/p')
check "e. NRI: synchronized: with at least 1 pod and 1 container (${sync_line:-no such line})" \
	sh -c "[ '${pods:-0}' -ge 1 ] && [ '${ctrs:-0}' -ge 1 ]"
scrape_metrics
check "e. wbguard_nri_connected 1" test "$(metric wbguard_nri_connected)" = 1
check "e. wbguard_nri_connections_total >= 2 ($(metric wbguard_nri_connections_total))" \
	test "$(metric wbguard_nri_connections_total | cut -d. -f1)" -ge 2 2>/dev/null

cri down "$pod2" , pods >/wbg-out/pods-2.txt 2>>/wbg-out/cri-errors.txt
check "CRI: web-2 stopped and removed after the restart" sh -c "[ $? = 0 ] && [ -n '$pod2' ] && [ ! -s /wbg-out/pods-2.txt ]"
daemon_stop
echo "# nri-containerd a-e: $(since "$t0") s in the guest"

# f-h: the DaemonSet's pod through this containerd's CRI (the guest shared)
. "$WBG_TOP/tests/vm/daemonset-cri.sh"
kill -TERM $cd_pid
wait $cd_pid
echo "# nri-containerd: $(since "$t0") s in the guest"
