# vm: --kernel stock --disks ext4
# units/kubernetes/daemonset.yaml's pod, run by crun as a kubelet's runtime
# would run it (tests/vm/pod-to-oci: its host namespaces, command,
# capabilities, read-only root and volumes, nothing else), does the whole
# job on the host from inside: BPF, a handover of a pod's cgroup (files on a
# host filesystem it cannot see in its own mount namespace), the scratch
# cycle, the dying-wb check, raw block-device writes (whose node a pod may
# not open: counted with that reason), the OCI hook
# on the host registering through the hostPath socket, the sysctl, restored
# at SIGTERM. Then again without each capability and without the hostPath:
# each must break something, or the manifest asks for more than it needs.
. "$WBG_TOP/tests/vm/lib.sh"
manifest=$WBG_TOP/units/kubernetes/daemonset.yaml
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
check "the manifests parse as YAML with the expected kinds" python3 -c "
import yaml, sys
kinds = sorted(d['kind'] for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d)
assert kinds == ['ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'DaemonSet',
                 'PrometheusRule', 'ServiceAccount'], kinds
" "$manifest" "$WBG_TOP/units/kubernetes/serviceaccount.yaml" "$WBG_TOP/units/kubernetes/components/prometheus-operator/prometheusrule.yaml"
# The image's binaries where the Containerfile puts them.
install -m 755 "$WBG_BUILD/daemon/wbguardd" /usr/local/sbin/wbguardd
install -m 755 "$WBG_BUILD/daemon/wbguardctl" /usr/local/bin/wbguardctl # the liveness probe's
mkdir -p /etc/wbguard
caps=$(python3 -c "import yaml; d=[x for x in yaml.safe_load_all(open('$manifest')) if x and x['kind']=='DaemonSet'][0]; print(' '.join([c for c in d['spec']['template']['spec']['containers'] if c['name'] == 'wbguardd'][0]['securityContext']['capabilities']['add']))")
echo "# manifest capabilities: $caps"
# A test-only policy: pods named g* hold the sysctl (global mechanism).
# [flush] mode = eager: the scenario checks the flush path from a pod
# (capabilities, mount namespaces, the device cgroup) at each removal;
# on-evidence reaches the same path only when a replacement writes
# (evidence.sh, systemd, stall-stock).
extra='[policy "kubepods.slice/g*"]
dirty_expire = 2s
mechanism = global
[flush]
mode = eager'
mkdir -p /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/wbgds
echo +memory >/sys/fs/cgroup/kubepods.slice/cgroup.subtree_control
truncate -s 64M /mnt/ext4/loop.img
loop=$(losetup -f --show /mnt/ext4/loop.img)
dirty() { awk '$1 == "Dirty:" {print $2}' /proc/meminfo; }

# pod_cgroup NAME CMD: runs CMD in kubepods.slice/NAME, removes it, prints
# wbguardd's record of it.
pod_cgroup() {
	local cg=kubepods.slice/$1 i rec
	mkdir -p /sys/fs/cgroup/$cg
	sh -c "echo \$\$ >/sys/fs/cgroup/$cg/cgroup.procs; $2"
	sleep 1
	rmdir /sys/fs/cgroup/$cg
	await_record "\"cgroup\":\"$cg\""
	rec=$(grep "\"cgroup\":\"$cg\"" /run/wbguard/handovers.jsonl 2>/dev/null | tail -1)
	echo "# $1: $rec" >&2
	echo "$rec"
}

# scenario NAME: what the pod must do, each part adding "what=ok|FAIL" to
# $res; with QUICK set, it stops at the first failure.
quick_stop() { [ -n "${QUICK:-}" ] && echo "$res" | grep -q FAIL; }
scenario() {
	local name=$1 i attached rec
	i=0
	while ! grep -q '^info: Watching' /wbg-out/pod-$name.log && [ $i -lt 300 ]; do
		[ "$(crun state wbguard-$name 2>/dev/null | jq -r .status)" = running ] || break
		sleep 0.1; i=$((i + 1))
	done
	grep -q '^info: Watching' /wbg-out/pod-$name.log && res="start=ok" || res="start=FAIL"
	quick_stop && return
	curl -sf http://127.0.0.1:9573/metrics >/wbg-out/pod-$name.prom
	# the probes as the kubelet runs them: /livez and /readyz on the
	# probes' own listener, where the manifest points them; another
	# user's connection there gets no answer
	[ "$(curl -sf --max-time 1 http://127.0.0.1:9575/livez)" = ok ] &&
		[ "$(curl -sf --max-time 1 http://127.0.0.1:9575/readyz)" = ok ] &&
		! setpriv --reuid=65534 --regid=65534 --clear-groups curl -sf --max-time 2 http://127.0.0.1:9575/livez >/dev/null 2>&1 &&
		res="$res probes=ok" || res="$res probes=FAIL"
	# /metrics for the proxy's user (the manifest's runAsUser) and root,
	# not for another user on the node
	[ "$(setpriv --reuid=$proxy_uid --regid=$proxy_uid --clear-groups curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9573/metrics)" = 200 ] &&
		[ "$(setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9573/metrics)" = 403 ] &&
		res="$res users=ok" || res="$res users=FAIL"
	# CAP_DAC_READ_SEARCH: a cgroup's own inodes are opened by handle
	# (without it, refused and said: its flushes are syncfs)
	[ "$(awk '$1 == "wbguard_flush_inode_handles_available" {print $2}' /wbg-out/pod-$name.prom)" = 1 ] &&
		res="$res handles=ok" || res="$res handles=FAIL"
	attached=$(grep -c '^wbguard_bpf_program_attached{.*} 1$' /wbg-out/pod-$name.prom)
	echo "# $name: $attached BPF programs attached" >&2
	[ "${attached:-0}" -ge "${FULL_ATTACHED:-1}" ] && res="$res bpf=ok" || res="$res bpf=FAIL"
	quick_stop && return
	# the OCI hook on the host, at createRuntime of a pod's container
	mkdir -p /sys/fs/cgroup/kubepods.slice/h-$name /tmp/hb-$name
	sh -c "echo \$\$ >/sys/fs/cgroup/kubepods.slice/h-$name/cgroup.procs; exec sleep 60" &
	hp=$!
	sleep 0.3
	jq -n --arg cg /kubepods.slice/h-$name '{ociVersion: "1.0.2", linux: {cgroupsPath: $cg}, mounts: [],
		annotations: {"io.kubernetes.pod.name": "web-0", "io.kubernetes.pod.namespace": "shop", "io.kubernetes.container.name": "app"}}' \
		>/tmp/hb-$name/config.json
	jq -n --arg b /tmp/hb-$name --argjson pid $hp '{ociVersion: "1.0.2", id: "c-'$name'", status: "creating", pid: $pid, bundle: $b}' |
		"$WBG_BUILD/hooks/wbguard-oci-hook" 2>/wbg-out/pod-$name-hook.txt
	grep -q "registered with wbguardd" /wbg-out/pod-$name-hook.txt && res="$res hook=ok" || res="$res hook=FAIL"
	kill $hp; wait $hp 2>/dev/null
	quick_stop && return
	# a global pod: the host's sysctl
	mkdir -p /sys/fs/cgroup/kubepods.slice/g-$name
	sh -c "echo \$\$ >/sys/fs/cgroup/kubepods.slice/g-$name/cgroup.procs; exec sleep 60" &
	g=$!
	sleep 1
	[ "$(cat $sysctl)" = 200 ] && res="$res sysctl=ok" || res="$res sysctl=FAIL"
	quick_stop && return
	# a pod's cgroup dirties files on a host filesystem the pod cannot see
	# in its own mount namespace, exits, is removed
	rec=$(pod_cgroup p-$name "dd if=/dev/zero of=/mnt/ext4/ds-$name bs=1M count=8 status=none")
	[ "$(echo "$rec" | jq -r .outcome)" = flushed ] && [ "$(echo "$rec" | jq '[.target_list[] | select(.fstype == "ext4")] | length')" -ge 1 ] &&
		res="$res flush=ok" || res="$res flush=FAIL"
	[ "$(echo "$rec" | jq -r .cleanup_rerun)" = true ] && res="$res scratch=ok" || res="$res scratch=FAIL"
	[ "$(echo "$rec" | jq -r .dying_wb_clean)" = true ] && res="$res wbstats=ok" || res="$res wbstats=FAIL"
	quick_stop && return
	# raw writes to a block device no filesystem is mounted on (held open
	# elsewhere, so its last close does not write them): its node is what
	# the pod's device cgroup refuses; counted with that reason
	sleep 60 <$loop &
	holder=$!
	rec=$(pod_cgroup r-$name "dd if=/dev/zero of=$loop bs=1M count=8 status=none")
	kill $holder; wait $holder 2>/dev/null
	echo "$rec" | jq -r .reason | grep -q "device cgroup" && res="$res bdev-reason=ok" || res="$res bdev-reason=FAIL"
	quick_stop && return
	[ -n "${QUICK:-}" ] && return
	# the host's unit started beside the pod (a migration's mistake): it
	# exits 3 naming the pod, with the pod's lowered sysctl and its
	# control socket as they were
	local sc0 rc
	sc0=$(cat $sysctl)
	timeout 30 "$WBG_BUILD/daemon/wbguardd" >/wbg-out/pod-$name-second.log 2>&1
	rc=$?
	echo "# second wbguardd beside the pod: exit $rc: $(head -c 300 /wbg-out/pod-$name-second.log)" >&2
	[ $rc = 3 ] && grep -q "Another wbguardd runs on this node: pod wbguard/wbguard-" /wbg-out/pod-$name-second.log &&
		[ "$(cat $sysctl)" = "$sc0" ] && [ -S /run/wbguard/control ] &&
		crun exec wbguard-$name sh -c "p=/usr/local/bin/wbguardctl; [ -x \$p ] || p=$WBG_BUILD/daemon/wbguardctl; exec \$p ping --timeout 4" >/dev/null 2>&1 &&
		res="$res second=ok" || res="$res second=FAIL"
	# wbguardctl doctor in the pod, as an operator would run it there, and
	# on the node: both say a second agent was refused. The hook file on
	# the node where the package puts it (put there if the guest has none,
	# and taken away after), for the pod's doctor to find it through
	# host_root.
	local hooks=/usr/share/containers/oci/hooks.d/50-wbguard.json put_hooks=""
	if [ ! -e $hooks ]; then
		put_hooks=1
		install -D -m 644 "$WBG_BUILD/hooks/50-wbguard.json" $hooks
	fi
	crun exec wbguard-$name sh -c "command -v wbguardctl >/dev/null && exec wbguardctl doctor --json; exec $WBG_BUILD/daemon/wbguardctl doctor --json" \
		>/wbg-out/pod-$name-doctor.json 2>/dev/null
	"$WBG_BUILD/daemon/wbguardctl" doctor --json >/wbg-out/pod-$name-host-doctor.json 2>/dev/null
	jq -e '[.checks[] | select(.check == "wbguardd" and .result == "ok")] | length == 1' /wbg-out/pod-$name-doctor.json >/dev/null &&
		jq -e '[.checks[] | select(.check == "open by handle" and .result == "ok")] | length == 1' /wbg-out/pod-$name-doctor.json >/dev/null &&
		res="$res doctor=ok" || res="$res doctor=FAIL"
	for d in pod-$name-doctor pod-$name-host-doctor; do
		jq -c '.checks[] | select(.check == "one agent")' /wbg-out/$d.json | sed "s/^/# $d: /" >&2
	done
	jq -e '[.checks[] | select(.check == "one agent" and .result == "warn")] | length == 1' /wbg-out/pod-$name-doctor.json >/dev/null &&
		jq -e '[.checks[] | select(.check == "one agent" and .result == "warn")] | length == 1' /wbg-out/pod-$name-host-doctor.json >/dev/null &&
		res="$res doctors-second=ok" || res="$res doctors-second=FAIL"
	# the node's files, through host_root (/proc/1/root), not the image's:
	# the runtime state directories of the ConfigMap (crun's, which runs
	# this pod) and the package's hook file
	for c in "runtime state" "OCI hook file"; do
		jq -c --arg c "$c" '.checks[] | select(.check == $c)' /wbg-out/pod-$name-doctor.json | sed "s/^/# pod-$name-doctor: /" >&2
	done
	jq -e '[.checks[] | select(.check == "configuration" and .result == "ok" and (.detail | contains("/etc/wbguard/wbguard.conf, the node below /proc/1/root")))] | length == 1' \
		/wbg-out/pod-$name-doctor.json >/dev/null &&
		jq -e '[.checks[] | select(.check == "runtime state" and .result == "ok" and (.detail | contains("(/proc/1/root/run/")))] | length == 1' \
			/wbg-out/pod-$name-doctor.json >/dev/null &&
		jq -e --arg f "/proc/1/root$hooks" '[.checks[] | select(.check == "OCI hook file" and .result == "ok" and (.detail | startswith($f)))] | length == 1' \
			/wbg-out/pod-$name-doctor.json >/dev/null &&
		res="$res doctor-node-files=ok" || res="$res doctor-node-files=FAIL"
	[ -n "$put_hooks" ] && rm -f $hooks
	# wbguardctl verify in the pod: it does not work there (its writers
	# cannot join a cgroup outside the pod's cgroup namespace); what it
	# says is kept in the notes, and docs/operations.md says to run it on
	# the node
	crun exec wbguard-$name sh -c "w=\$(command -v wbguardctl || echo $WBG_BUILD/daemon/wbguardctl); exec \$w verify --json --cgroup-root /proc/1/root/sys/fs/cgroup/kubepods.slice --dir /proc/1/root/mnt/ext4" \
		>/wbg-out/pod-$name-verify.json 2>/wbg-out/pod-$name-verify.err
	echo "verify in the pod: exit $?; $(grep -v '^info: Kernel has no\|libbpf: \|skipped\|did not attach' /wbg-out/pod-$name-verify.err | head -c 300 | tr '\n' ' ')" >>/wbg-out/notes.txt
	# the ConfigMap edited: the kubelet's swap of ..data, no restart; the
	# new configuration (the flush mode back to the default) is in effect
	local v=/tmp/ds-$name/volume-config ts=..2026_12_01_00_05_00.2
	mkdir $v/$ts
	sed 's/^mode = eager$/mode = on-evidence/' $v/..data/wbguard.conf >$v/$ts/wbguard.conf
	ln -s $ts $v/..data_tmp && mv -T $v/..data_tmp $v/..data
	rm -rf $v/..2026_12_01_00_00_00.1
	i=0; while ! grep -q '^info: Reloaded /etc/wbguard/wbguard.conf' /wbg-out/pod-$name.log && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	curl -sf http://127.0.0.1:9573/metrics >/wbg-out/pod-$name-after.prom
	grep -q '^info: Reloaded /etc/wbguard/wbguard.conf' /wbg-out/pod-$name.log &&
		grep -q '^wbguard_flush_mode{mode="eager"} 1' /wbg-out/pod-$name.prom &&
		grep -q '^wbguard_flush_mode{mode="on-evidence"} 1' /wbg-out/pod-$name-after.prom &&
		res="$res configmap=ok" || res="$res configmap=FAIL"
}

# run_pod NAME [pod-to-oci options]: starts the pod, runs the scenario, stops
# it (SIGTERM: the sysctl must be restored); prints the "what=ok|FAIL" words.
run_pod() {
	local name=$1 b=/tmp/ds-$1 i res="" hp="" g=""
	shift
	rm -rf "$b" /run/wbguard/handovers.jsonl
	mkdir -p "$b"
	"$WBG_TOP/tests/vm/pod-to-oci" "$manifest" "$b" --extra-conf "$extra" "$@" || { echo "setup=FAIL"; return; }
	(cd "$b" && crun run -d wbguard-$name </dev/null >/wbg-out/pod-$name.log 2>&1)
	scenario $name
	crun kill wbguard-$name TERM 2>/dev/null
	i=0; while [ "$(crun state wbguard-$name 2>/dev/null | jq -r .status)" = running ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -n "${QUICK:-}" ] || { [ "$(cat $sysctl)" = "$admin" ] && res="$res restore=ok" || res="$res restore=FAIL"; }
	crun delete -f wbguard-$name 2>/dev/null
	[ -n "$g" ] && { kill $g; wait $g 2>/dev/null; }
	rmdir /sys/fs/cgroup/kubepods.slice/g-$name /sys/fs/cgroup/kubepods.slice/h-$name 2>/dev/null
	echo "$admin" >$sysctl
	echo "$res" | tee /wbg-out/pod-$name.txt
}

# The kube-rbac-proxy's user, which the ConfigMap's allow_users must name.
proxy_uid=$(python3 -c "
import yaml
docs = [d for d in yaml.safe_load_all(open('$manifest')) if d]
pod = next(d for d in docs if d['kind'] == 'DaemonSet')['spec']['template']['spec']
print(next(c for c in pod['containers'] if c['name'] == 'kube-rbac-proxy')['securityContext']['runAsUser'])")

# As shipped: the image built from the Containerfile (tests/kubernetes/image
# exported its root), or, where it was not built, the guest's userland.
image=$WBG_BUILD/image/rootfs
if [ -x "$image/usr/local/sbin/wbguardd" ]; then
	full=$(run_pod full --image-rootfs "$image" 2>>/wbg-out/notes.txt)
	ok "as shipped: the image built from units/kubernetes/Containerfile runs the pod"
else
	full=$(run_pod full 2>>/wbg-out/notes.txt)
	skip "as shipped: the image built from units/kubernetes/Containerfile (not built here: tests/kubernetes/image)"
fi
FULL_ATTACHED=$(grep -c '^wbguard_bpf_program_attached{.*} 1$' /wbg-out/pod-full.prom)
echo "# with the manifest as it is: $full"
for w in start probes users handles bpf hook sysctl flush scratch wbstats bdev-reason second doctor doctors-second doctor-node-files configmap restore; do
	check "as shipped: $w" sh -c "echo '$full' | grep -q '$w=ok'"
done
sed 's/^/#/' /wbg-out/notes.txt; : >/wbg-out/notes.txt
# Taking one away, the first thing that breaks is enough.
QUICK=1
for c in $caps; do
	r=$(run_pod "no-$c" --drop-cap "$c" 2>>/wbg-out/notes.txt)
	broken=$(echo "$r" | tr ' ' '\n' | sed -n 's/=FAIL$//p' | tr '\n' ' ')
	echo "# without CAP_$c: broken: ${broken:-nothing}"
	check "CAP_$c is needed (something breaks without it)" test -n "$broken"
done
r=$(run_pod no-run --drop-volume run 2>>/wbg-out/notes.txt)
broken=$(echo "$r" | tr ' ' '\n' | sed -n 's/=FAIL$//p' | tr '\n' ' ')
echo "# without the hostPath /run/wbguard: broken: ${broken:-nothing}"
check "the hostPath /run/wbguard is needed (the hook cannot reach the daemon without it)" sh -c "echo '$broken' | grep -q hook"
# Its metrics on the node's loopback only (hostNetwork: 0.0.0.0 would serve
# every pod), behind the proxy; the probes where the server is.
check "the ConfigMap serves metrics on 127.0.0.1 only, to the proxy's user; both probes on the probes' own listener" python3 -c "
import yaml
docs = [d for d in yaml.safe_load_all(open('$manifest')) if d]
cm = next(d for d in docs if d['kind'] == 'ConfigMap')['data']['wbguard.conf']
assert [l.strip() for l in cm.splitlines() if l.strip().startswith('listen')] == ['listen = 127.0.0.1:9573']
pod = next(d for d in docs if d['kind'] == 'DaemonSet')['spec']['template']['spec']
w = next(c for c in pod['containers'] if c['name'] == 'wbguardd')
assert [l.strip() for l in cm.splitlines() if l.strip().startswith('probe_listen')] == ['probe_listen = 127.0.0.1:9575']
for probe, path in (('livenessProbe', '/livez'), ('readinessProbe', '/readyz')):
    g = w[probe]['httpGet']
    assert (g['host'], g['port'], g['path']) == ('127.0.0.1', 9575, path), (probe, g)
p = next(c for c in pod['containers'] if c['name'] == 'kube-rbac-proxy')
assert '--upstream=http://127.0.0.1:9573/' in p['args']
users = [l.split('=', 1)[1].split() for l in cm.splitlines() if l.strip().startswith('allow_users')]
assert users and str(p['securityContext']['runAsUser']) in users[0], users
"
losetup -d "$loop"
