# Sourced by VM jobs with containerd-guest.sh's containerd running
# (tests/vm/daemonset-cri.sh, tests/bench/restart-bench): pods in the
# kubelet's cgroupfs layout (kubepods/burstable/pod<uid>/<container>) and
# units/kubernetes/daemonset.yaml's wbguardd pod started as the kubelet
# starts it.
ds_manifest=$WBG_TOP/units/kubernetes/daemonset.yaml
mkdir -p /sys/fs/cgroup/kubepods/burstable
echo +memory >/sys/fs/cgroup/kubepods/cgroup.subtree_control
echo +memory >/sys/fs/cgroup/kubepods/burstable/cgroup.subtree_control

# ds_start [EXTRA_CONF]: the DaemonSet's pod through the CRI
# (tests/vm/pod-to-cri: its host namespaces, capabilities, read-only root,
# no_new_privs, seccomp RuntimeDefault, which is containerd's own profile,
# and its volumes), EXTRA_CONF added to its configuration; waits until its
# wbguardd watches. Sets dspod, dsctr, dslog, dspid; fails if it never ran.
ds_start() {
	local ids i
	install -m 755 "$WBG_BUILD/daemon/wbguardd" /usr/local/sbin/wbguardd
	install -m 755 "$WBG_BUILD/daemon/wbguardctl" /usr/local/bin/wbguardctl
	mkdir -p /etc/wbguard
	rm -f /run/wbguard/handovers.jsonl
	"$WBG_TOP/tests/vm/pod-to-cri" "$ds_manifest" /tmp/ds --image localhost/wbg-busybox:1 --bind-userland \
		${1:+--extra-conf "$1"} || echo "pod-to-cri failed" >>/wbg-out/cri-errors.txt
	cp /tmp/ds/pod.json /wbg-out/ds-pod.json; cp /tmp/ds/ctr.json /wbg-out/ds-ctr.json
	ids=$(cri run /tmp/ds/pod.json /tmp/ds/ctr.json 2>>/wbg-out/cri-errors.txt)
	dspod=${ids% *} dsctr=${ids#* }
	dslog=/tmp/ds/logs/wbguardd.log
	[ -n "$ids" ] || return 1
	i=0
	while ! grep -q 'info: Watching' $dslog 2>/dev/null && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
	dspid=$(pgrep -f '^/usr/local/sbin/wbguardd --config' | head -1)
	[ -n "$dspid" ]
}

# kpod NAME: a pod in namespace shop, in the kubelet's cgroupfs layout,
# under a 256 MiB pod-level limit (the kubelet sets the pod cgroup's
# memory.max from its containers' limits).
kpod() {
	local cg=/sys/fs/cgroup/kubepods/burstable/pod-uid-$1 ann=${2:-}
	[ -n "$ann" ] || ann='{}'
	mkdir -p $cg /tmp/pods/$1 /tmp/out-$1 /mnt/ext4/$1
	echo +memory >$cg/cgroup.subtree_control
	echo 256M >$cg/memory.max
	jq -n --arg n "$1" --argjson ann "$ann" '{
		metadata: {name: $n, namespace: "shop", uid: ("uid-" + $n), attempt: 0},
		log_directory: ("/tmp/pods/" + $n), labels: {app: $n}, annotations: $ann,
		linux: {cgroup_parent: ("/kubepods/burstable/pod-uid-" + $n),
			security_context: {namespace_options: {network: "NODE", pid: "CONTAINER", ipc: "POD"}}}
	}' >/tmp/pods/$1.json
}
# kctr POD NAME ATTEMPT CMD: a container of POD running CMD with the
# guest's libraries and the build (wbstall) bound read-only, /data its
# hostPath directory,
# /out where it writes its result.
kctr() {
	jq -n --arg p "$1" --arg n "$2" --argjson a "$3" --arg cmd "$4" --arg top "$WBG_BUILD" '{
		metadata: {name: $n, attempt: $a}, image: {image: "localhost/wbg-busybox:1"},
		command: ["sh", "-c", $cmd], log_path: ($n + "-" + ($a | tostring) + ".log"),
		mounts: ([{container_path: "/data", host_path: ("/mnt/ext4/" + $p)},
			  {container_path: "/out", host_path: ("/tmp/out-" + $p)},
			  {container_path: $top, host_path: $top, readonly: true}] +
			 [("/usr", "/lib", "/lib64") as $d | {container_path: $d, host_path: ("/usr" + ($d | ltrimstr("/usr"))), readonly: true}]),
		labels: {}, annotations: {}, linux: {}
	}' >/tmp/pods/$1-$2-$3.json
}
# awaitf FILE [TENTHS]: until FILE exists
awaitf() { local i=0; while [ ! -s "$1" ] && [ $i -lt "${2:-900}" ]; do sleep 0.1; i=$((i + 1)); done; }
