# vm: --kernel stock --disks ext4
# wbguard-oci-hook with Debian's crun and runc: real bundles with the hook
# at createRuntime and poststop, in both flush modes: what the hook adds to
# a container's lifecycle against the same container without it (eager:
# the flush; on-evidence: an answer, "watched", not a wait). With wbguardd running, createRuntime
# registers the container (its pod names from the CRI's annotations) and
# poststop has wbguardd flush its cgroup and waits; with wbguardd stopped,
# poststop flushes by itself. Either way the container's data is written
# back by the time the runtime's delete returns. Input the hook cannot take
# (a config.json crun runs but the hook dislikes): logged, the container
# runs; an error (exit 1) only with --strict; never a failure at poststop;
# nothing flushed that the container does not name.
. "$WBG_TOP/tests/vm/lib.sh"
# The hook's handovers flush at once: [flush] mode = eager (evidence.sh
# covers the default, on-evidence).
export WBG_FLUSH_MODE=eager
. "$WBG_TOP/tests/vm/oci.sh"
hook=$WBG_BUILD/hooks/wbguard-oci-hook
ctl=$WBG_BUILD/daemon/wbguardctl
mkdir -p /sys/fs/cgroup/wbgtest && echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control
# The runtimes run hooks with their output discarded: a wrapper keeps it,
# and records each call and its exit status.
cat >/tmp/hook-wrap <<EOW
#!/bin/sh
t0=\$(date +%s%N)
$hook "\$@" 2>>/wbg-out/hook.log
rc=\$?
echo "\$* rc=\$rc ms=\$(( (\$(date +%s%N) - t0) / 1000000 ))" >>/wbg-out/hook-calls.txt
exit \$rc
EOW
chmod +x /tmp/hook-wrap
dirty() { awk '$1 == "Dirty:" {print $2}' /proc/meminfo; }
# crun: the shipped hooks.d file's arguments (the stage from the state's
# status), CRI-O's annotations; runc: explicit stages, containerd's.
shipped_args=$(jq -c '.hook.args' "$WBG_BUILD/hooks/50-wbguard.json")
ann_crun='{"io.kubernetes.pod.name":"web-0","io.kubernetes.pod.namespace":"shop","io.kubernetes.container.name":"app"}'
ann_runc='{"io.kubernetes.cri.sandbox-name":"db-1","io.kubernetes.cri.sandbox-namespace":"store","io.kubernetes.cri.container-name":"pg"}'
# run_container RUNTIME [LINGER [PARENT [WRITTEN]]]: create/start/exit/delete with the hook,
# checking that the 16 MiB it wrote are written back when delete returns
# (WRITTEN no: not checked).
run_container() {
	local rt=$1 b=/tmp/oci-$1 cr pst ann linger=${2:-3} parent=${3:-wbgtest} written=${4:-yes} wb
	if [ "$rt" = crun ]; then
		cr=$shipped_args pst=$shipped_args ann=$ann_crun
	else
		cr='["wbguard-oci-hook","createRuntime"]' pst='["wbguard-oci-hook","--timeout","20","poststop"]' ann=$ann_runc
	fi
	oci_bundle $b
	# the periodic flusher off while it runs: the record is to find the
	# 16 MiB dirty at the exit, and only the hook's flush is to write them
	# (in a CI run the crun container's record found under 12 MiB)
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	# a new file each time: ext4 writes a file truncated and rewritten at
	# close by itself (auto_da_alloc)
	rm -f /mnt/ext4/$rt/f
	jq --arg h /tmp/hook-wrap --argjson cr "$cr" --argjson pst "$pst" '.hooks = {
		createRuntime: [{path: $h, args: $cr}], poststop: [{path: $h, args: $pst}]}' \
		$b/config.json >$b/c && mv $b/c $b/config.json
	oci_run $rt $b hook-$rt $parent/hook-$rt "$ann" /mnt/ext4/$rt "dd if=/dev/zero of=/data/f bs=1M count=16 2>/dev/null; sleep $linger"
	check "$rt: the hook ran at createRuntime and resolved the cgroup" \
		grep -q "container hook-$rt: cgroup $parent/hook-$rt" /wbg-out/hook.log
	$ctl list --json >/wbg-out/list-$rt.json 2>/dev/null
	i=0; while [ "$($rt state hook-$rt 2>/dev/null | jq -r .status)" = running ] && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	before=$(dirty)
	$rt delete hook-$rt 2>/wbg-out/$rt-delete.txt
	check "$rt: delete succeeds with the hook at poststop" test $? = 0
	after=$(dirty)
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
	echo "# $rt: Dirty $before kB before delete, $after kB after"
	[ "$written" = no ] || check "$rt: written back by the time delete returned" test "$after" -lt 4000
}

daemon_start "$WBG_BUILD"
check "wbguardd starts" test $? = 0
for rt in crun runc; do
	run_container $rt
	check "$rt: registered with wbguardd" grep -q "container hook-$rt: registered with wbguardd" /wbg-out/hook.log
	check "$rt: poststop had wbguardd flush it" grep -q "container hook-$rt: wbguardd handover [0-9]*: \(flushed\|clean\)" /wbg-out/hook.log
done
# (wbguardd flushed each at populated 0, when the container exited, so
# nothing was left dirty for delete; its record says what was dirty then.)
check "list: crun's container with CRI-O's pod names" \
	test "$(jq -r '.[] | select(.cgroup == "wbgtest/hook-crun") | "\(.namespace)/\(.pod)/\(.container) \(.container_id)"' /wbg-out/list-crun.json)" = "shop/web-0/app hook-crun"
check "list: runc's container with containerd's pod names" \
	test "$(jq -r '.[] | select(.cgroup == "wbgtest/hook-runc") | "\(.namespace)/\(.pod)/\(.container)"' /wbg-out/list-runc.json)" = "store/db-1/pg"
# The kernel's per-cgroup series (here: inodes switched off the removed
# cgroups' wbs by the cleanup) join cAdvisor's: id, and pod, namespace,
# container from the registration.
curl -sf http://127.0.0.1:9573/metrics >/wbg-out/metrics.txt
grep '^wbguard_cgroup_[a-z_]*{id="/wbgtest/hook-' /wbg-out/metrics.txt | sed 's/^/# /'
check "per-cgroup series of the registered containers carry their pod labels" sh -c \
	"grep -q '^wbguard_cgroup_[a-z_]*{id=\"/wbgtest/hook-[a-z]*\",pod=\"\(web-0\|db-1\)\",namespace=\"\(shop\|store\)\",container=\"\(app\|pg\)\"' /wbg-out/metrics.txt &&
	 ! grep '^wbguard_cgroup_[a-z_]*{id=\"/wbgtest/hook-' /wbg-out/metrics.txt | grep -qv ',pod=\"'"
check "every per-cgroup series has the same four labels first (id, pod, namespace, container)" sh -c \
	"grep -q '^wbguard_cgroup_' /wbg-out/metrics.txt &&
	 ! grep '^wbguard_cgroup_' /wbg-out/metrics.txt | grep -qv '^[a-z_]*{id=\"[^\"]*\",pod=\"[^\"]*\",namespace=\"[^\"]*\",container=\"[^\"]*\"[,}]'"
$ctl handovers --json >/wbg-out/handovers.json
for rt in crun runc; do
	id=$(sed -n "s/.*container hook-$rt: wbguardd handover \([0-9]*\).*/\1/p" /wbg-out/hook.log | tail -1)
	check "$rt: the handover the hook was told of is wbguardd's record for its cgroup" \
		test "$(jq -r --argjson id "${id:-0}" '.[] | select(.id == $id) | .cgroup' /wbg-out/handovers.json)" = wbgtest/hook-$rt
	check "$rt: its record names the pod, namespace and container" \
		test "$(jq -r --argjson id "${id:-0}" '.[] | select(.id == $id) | "\(.namespace)/\(.pod)/\(.container)"' /wbg-out/handovers.json)" = \
		"$([ $rt = crun ] && echo shop/web-0/app || echo store/db-1/pg)"
	check "$rt: and it found the container's 16 MiB dirty" \
		test "$(jq -r --argjson id "${id:-0}" '.[] | select(.id == $id) | .dirty_bytes' /wbg-out/handovers.json)" -gt $((12 << 20))
done
# As crictl takes them: a container addressed by its pod's names (its own
# container, so that the records above keep what they found dirty).
b=/tmp/oci-names
oci_bundle $b
jq --arg h /tmp/hook-wrap '.hooks = {createRuntime: [{path: $h, args: ["wbguard-oci-hook", "createRuntime"]}]}' \
	$b/config.json >$b/c && mv $b/c $b/config.json
oci_run crun $b names wbgtest/names '{"io.kubernetes.pod.name":"web-9","io.kubernetes.pod.namespace":"shop","io.kubernetes.container.name":"side"}' \
	/mnt/ext4/names "dd if=/dev/zero of=/data/f bs=1M count=4 2>/dev/null; sleep 5"
i=0; while ! grep -q "Registered container names:" /wbg-out/wbguardd.log && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
$ctl list --json --namespace shop --pod web-9 >/wbg-out/list-pod.json 2>/dev/null
check "list --namespace shop --pod web-9: only that pod's container" \
	test "$(jq -r '[.[] | .cgroup] | join(" ")' /wbg-out/list-pod.json)" = "wbgtest/names"
$ctl flush --pod web-9 --container side >/wbg-out/flush-pod.txt 2>&1
frc=$?
check "flush --pod web-9 --container side: its cgroup, by name (exit $frc: $(cat /wbg-out/flush-pod.txt))" \
	sh -c "[ $frc = 0 ] && grep -q '^handover [0-9]*: ' /wbg-out/flush-pod.txt"
crun kill names KILL 2>/dev/null; sleep 0.3; crun delete -f names 2>/dev/null
check "registration and flush logged by wbguardd" grep -q "Registered container hook-crun: cgroup /wbgtest/hook-crun, pod shop/web-0" /wbg-out/wbguardd.log
# [metrics] per_cgroup = no: the per-cgroup families go, the node's stay.
printf '\n[metrics]\nper_cgroup = no\n' >>/tmp/wbg-mode.conf
$ctl reload
curl -sf http://127.0.0.1:9573/metrics >/wbg-out/metrics-no-per-cgroup.txt
check "per_cgroup = no (after a reload): no per-cgroup series, the node-wide totals still there" sh -c \
	"! grep -q '^wbguard_cgroup_[a-z_]*{id=' /wbg-out/metrics-no-per-cgroup.txt &&
	 grep -q '^wbguard_kernel_inode_wb_switches_total ' /wbg-out/metrics-no-per-cgroup.txt"

# A state whose pid is not in config.json's cgroup names someone else's
# process: refused, nothing registered.
mkdir -p /tmp/other && jq '.linux.cgroupsPath = "/wbgtest/other" | .hooks = {}' /tmp/oci-crun/config.json >/tmp/other/config.json
echo '{"id":"other","bundle":"/tmp/other","status":"creating","pid":1}' | $hook --strict createRuntime 2>/wbg-out/h0.txt
check "a state pid outside the container's cgroup: exit 1 with --strict, named" \
	sh -c "test $? = 1 && grep -q \"'pid' 1 is in cgroup /.*, not in config.json's linux.cgroupsPath (/wbgtest/other)\" /wbg-out/h0.txt"
check "and not registered" sh -c "! grep -q 'Registered container other' /wbg-out/wbguardd.log"
# poststop names only its id: an id wbguardd never registered is not
# flushed by wbguardd (the hook falls back to its own bundle's mounts).
echo '{"id":"nope","bundle":"/tmp/other","status":"stopped"}' | $hook poststop 2>/wbg-out/h00.txt
check "poststop of an unregistered id: wbguardd refuses, the hook falls back, exit 0" \
	sh -c "test $? = 0 && grep -q 'No container nope was registered; flushing here' /wbg-out/h00.txt"
daemon_stop

# Without wbguardd: poststop flushes by itself. (In a cgroup without the
# memory controller: a fresh memcg's wb has no writeout history, so the
# kernel starts writing its data almost at once; the root wb's stays dirty.)
mkdir -p /sys/fs/cgroup/wbgnomem
run_container crun 0 wbgnomem
check "no daemon: the container's 16 MiB were dirty before delete" test "$before" -gt 12000
check "no daemon: createRuntime says it is not registered" grep -q "container hook-crun: wbguardd not reachable at /run/wbguard/control; not registered" /wbg-out/hook.log
check "no daemon: poststop wrote back by itself" grep -q "container hook-crun: its filesystems written back" /wbg-out/hook.log

# (crun and runc with wbguardd: 4; the names container: 1; crun without: 2)
check "every hook call exited 0" test -z "$(grep -v 'rc=0 ' /wbg-out/hook-calls.txt)" -a "$(wc -l </wbg-out/hook-calls.txt)" = 7

# wbguardd up, the container's cgroup outside its [daemon] roots (as one
# past a tenant's share of its tables is untracked): the hook does not
# syncfs by itself, outside every budget wbguardd keeps.
printf '[daemon]\nroots = wbgtest\n' >/tmp/roots.conf
daemon_start "$WBG_BUILD" --config /tmp/roots.conf
mkdir -p /sys/fs/cgroup/wbgother
: >/wbg-out/hook.log
run_container crun 0 wbgother no
check "untracked: poststop is told wbguardd does not track it, and does not flush by itself" sh -c \
	"grep -q 'container hook-crun: wbguardd: wbguardd does not track /wbgother/hook-crun.*; not flushed here' /wbg-out/hook.log &&
	 ! grep -q 'container hook-crun: its filesystems written back' /wbg-out/hook.log"
daemon_stop
rmdir /sys/fs/cgroup/wbgother 2>/dev/null

# What the hook adds to a container's lifecycle, in both modes: the same
# container (24 MiB written, then exit) from run to the end of delete, with
# the hook and without it. Eager: poststop waits for the flush; on-evidence
# (the default): wbguardd watches the removal and answers at once.
# lifecycle RT HOOK(0|1) ID: prints the milliseconds.
lifecycle() {
	local rt=$1 b=/tmp/lc-$1 t0 i=0
	oci_bundle $b
	if [ "$2" = 1 ]; then
		jq --arg h /tmp/hook-wrap '.hooks = {createRuntime: [{path: $h, args: ["wbguard-oci-hook", "createRuntime"]}],
			poststop: [{path: $h, args: ["wbguard-oci-hook", "--timeout", "5", "poststop"]}]}' $b/config.json >$b/c && mv $b/c $b/config.json
	fi
	rm -f /mnt/ext4/lc-$3/f
	t0=$(date +%s%N)
	oci_run $rt $b $3 wbgtest/$3 '{}' /mnt/ext4/lc-$3 "dd if=/dev/zero of=/data/f bs=1M count=24 2>/dev/null"
	while [ "$($rt state $3 2>/dev/null | jq -r .status)" = running ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
	$rt delete $3 2>>/wbg-out/oci-errors.txt
	echo $(( ($(date +%s%N) - t0) / 1000000 ))
}
for mode in eager on-evidence; do
	WBG_FLUSH_MODE=$mode daemon_start "$WBG_BUILD"
	for rt in crun runc; do
		: >/wbg-out/hook-calls.txt
		plain=$(lifecycle $rt 0 lc-$rt-$mode-0)
		hooked=$(lifecycle $rt 1 lc-$rt-$mode-1)
		ps_ms=$(sed -n 's/.*poststop rc=0 ms=\([0-9]*\)$/\1/p' /wbg-out/hook-calls.txt | tail -1)
		cr_ms=$(sed -n 's/.*createRuntime rc=0 ms=\([0-9]*\)$/\1/p' /wbg-out/hook-calls.txt | tail -1)
		echo "# $mode $rt: run to delete ${plain} ms without the hook, ${hooked} ms with it (+$((hooked - plain)) ms); the hook's calls: createRuntime ${cr_ms:-?} ms, poststop ${ps_ms:-?} ms"
		echo "$mode $rt $plain $hooked ${cr_ms:-0} ${ps_ms:-0}" >>/wbg-out/hook-added.txt
		answer=$(sed -n "s/.*container lc-$rt-$mode-1: wbguardd handover [0-9]*: \([a-z-]*\).*/\1/p" /wbg-out/hook.log | tail -1)
		if [ $mode = eager ]; then
			check "eager, $rt: poststop waited for wbguardd's flush ($answer)" test "$answer" = flushed
		else
			check "on-evidence, $rt: poststop answered at once: watched ($answer)" test "$answer" = watched
			# the bug this guards against waited the whole --timeout (5 s)
			check "on-evidence, $rt: poststop returned well inside its 5 s timeout (${ps_ms:-?} ms)" \
				test "${ps_ms:-5000}" -lt 2500
		fi
	done
	daemon_stop
done

# A container crun runs whose config.json the hook could not take (a
# linux.cgroupsPath with a "." component, which crun resolves and the hook
# refused as not a cgroup path: the runtime refused the container then):
# crun runs it without the hook, and now with the hook at createRuntime too,
# which registers it by its init's cgroup.
daemon_start "$WBG_BUILD"
odd_run() { # odd_run ID HOOK(0|1)
	local b=/tmp/oci-$1 i=0
	rm -rf $b /mnt/ext4/$1
	oci_bundle $b
	[ "$2" = 1 ] && jq --arg h /tmp/hook-wrap '.hooks = {createRuntime: [{path: $h, args: ["wbguard-oci-hook", "createRuntime"]}]}' \
		$b/config.json >$b/c && mv $b/c $b/config.json
	oci_run crun $b $1 wbgtest/./$1 '{}' /mnt/ext4/$1 "echo ran >/data/ran"
	while [ "$(crun state $1 2>/dev/null | jq -r .status)" = running ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	crun delete -f $1 2>/dev/null
	test -s /mnt/ext4/$1/ran
}
if odd_run odd0 0; then
	: >/wbg-out/hook-calls.txt
	odd_run odd1 1
	check "a config.json crun runs and the hook cannot read: with the hook, the container runs" test $? = 0
	check "its createRuntime exited 0" grep -q "createRuntime rc=0" /wbg-out/hook-calls.txt
	check "the hook said why, and registered it by its init's cgroup" sh -c \
		"grep -q \"container odd1: config.json: linux.cgroupsPath '/wbgtest/./odd1' is not a cgroup path the hook reads\" /wbg-out/hook.log &&
		 grep -q 'Registered container odd1: cgroup /wbgtest/odd1' /wbg-out/wbguardd.log"
else
	skip "a config.json crun runs and the hook cannot read (this crun refused /wbgtest/./odd0 itself)"
fi
daemon_stop

# Malformed and hostile state, straight to the hook: with --strict, an
# error naming what is wrong; by default the container runs.
echo '{"id":"x"' | $hook createRuntime 2>/dev/null
check "truncated state: createRuntime exits 0 (the container runs)" test $? = 0
echo '{"id":"x"' | $hook --strict createRuntime 2>/wbg-out/h1.txt
check "truncated state, --strict: createRuntime exits 1" test $? = 1
check "truncated state: the error says so" grep -q "Bad container state on stdin: state: not JSON" /wbg-out/h1.txt
echo '{"id":"x"' | $hook poststop 2>/dev/null
check "truncated state: poststop still exits 0" test $? = 0
echo '{"bundle":"/tmp/oci-crun"}' | $hook --strict createRuntime 2>/wbg-out/h2.txt
check "missing id: named" sh -c "test $? = 1 && grep -q \"'id' is missing\" /wbg-out/h2.txt"
head -c 3000000 /dev/zero | tr '\0' ' ' | $hook --strict createRuntime 2>/wbg-out/h3.txt
check "3 MB of input: refused as too large" sh -c "test $? = 1 && grep -q 'too large' /wbg-out/h3.txt"
mkdir -p /tmp/evil && jq '.linux.cgroupsPath = "/wbgtest/../../etc"' /tmp/oci-crun/config.json >/tmp/evil/config.json
echo '{"id":"evil","bundle":"/tmp/evil"}' | $hook --strict createRuntime 2>/wbg-out/h4.txt
check "a cgroupsPath with '..': exit 1, named" sh -c "test $? = 1 && grep -q \"linux.cgroupsPath '/wbgtest/../../etc' is not a cgroup path\" /wbg-out/h4.txt"
# poststop syncs only what the container names: a bundle whose config.json
# names nothing writable leaves other dirty data alone.
jq '.mounts = [] | .root.path = "/nonexistent"' /tmp/oci-crun/config.json >/tmp/evil/config.json
rm -rf /tmp/evil/rootfs
# (the kernel's periodic flusher off meanwhile: only a sync writes it)
wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
echo 0 >/proc/sys/vm/dirty_writeback_centisecs
# (the hook calls above without a daemon left detached fallback flushes:
# done first, so that none of them writes the data below; the data must be
# dirty before the call for the check to say anything)
i=0; while pgrep -f wbguard-oci-hook >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sync
for try in 1 2 3; do
	dd if=/dev/zero of=/mnt/ext4/other bs=1M count=16 status=none
	before=$(dirty)
	[ "$before" -gt 12000 ] && break
	echo "# other data: only $before kB dirty after writing 16 MiB (try $try)"
done
echo '{"id":"evil","bundle":"/tmp/evil","status":"stopped"}' | $hook poststop 2>/dev/null
check "poststop of a container naming no writable mount: exit 0" test $? = 0
check "and the other 16 MiB stay dirty" test "$(dirty)" -gt 12000
echo "# other data: Dirty $before kB before, $(dirty) kB after"
echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
rm -f /mnt/ext4/other
