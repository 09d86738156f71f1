# vm: --kernel stock --systemd --disks ext4
# vm-alone: it installs and purges the package in the guest's root
# wbguard as Debian's package installs it, under systemd as PID 1: apt
# installs the .deb (tests/deb/check built it) and the service is enabled
# and running with no other step, its hook file where CRI-O and Podman read
# it and its D-Bus policy in place; a drop-in reaches it without a reload
# (the config watch); then reloaded, restarted after a crash, stopped with
# the sysctl restored; its hardening as systemd-analyze scores it; purged,
# leaving the admin's sysctl and no state.
. "$WBG_TOP/tests/vm/lib.sh"
deb=$WBG_BUILD/deb/wbguard.deb
if [ ! -s "$deb" ]; then
	skip "service: no package built ($deb; tests/deb/check builds it)"
	exit 0
fi
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
ctl=/usr/bin/wbguardctl
# This machine's image has a policy-rc.d that forbids starting services
# (as container images do); a node has none. Gone in the guest only.
rm -f /usr/sbin/policy-rc.d
# The guest's root is this host's over 9p: man-db's trigger would re-index
# every manual page on it, twice (install and purge), for minutes under
# TCG. Its switch is off in the guest; `man -w` still finds the pages.
rm -f /var/lib/man-db/auto-update
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" >/wbg-out/apt-install.log 2>&1
check "apt installs the package" test $? = 0
check "wbguard.service is enabled by the package" test "$(systemctl is-enabled wbguard.service)" = enabled
i=0; while ! systemctl is-active --quiet wbguard.service && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "and running, with no other step (Type=notify: READY=1 came)" systemctl is-active --quiet wbguard.service
check "the unit runs the package's binary" test "$(systemctl show -p ExecStart --value wbguard.service | sed -n 's/.*path=\([^ ;]*\).*/\1/p')" = /usr/sbin/wbguardd
check "the hook file is in /usr/share/containers/oci/hooks.d, naming the package's hook" \
	test "$(jq -r .hook.path /usr/share/containers/oci/hooks.d/50-wbguard.json)" = /usr/libexec/wbguard/wbguard-oci-hook
check "the D-Bus policy is in place" test -s /usr/share/dbus-1/system.d/io.wbguard1.conf
check "wbguardctl status answers" sh -c "$ctl status >/wbg-out/status.txt"
check "man wbguardd resolves (the unit's Documentation=)" sh -c "man -w wbguardd | grep -q /usr/share/man/man8/wbguardd.8"
# A drop-in, with no reload asked for: the config watch reloads.
mkdir -p /etc/wbguard/conf.d
printf '[policy "wbgtest/g"]\ndirty_expire = 2s\nmechanism = global\n' >/etc/wbguard/conf.d/50-test.conf
i=0; while ! journalctl -u wbguard.service | grep -q 'drop-ins changed; reloading' && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "a new drop-in is picked up without a reload (config watch)" sh -c "journalctl -u wbguard.service | grep -q 'Reloaded /etc/wbguard/wbguard.conf'"
check "is-active" systemctl is-active --quiet wbguard.service
journalctl -u wbguard.service --no-pager >/wbg-out/journal-1.txt
# Debian's kernels (kernel.perf_event_paranoid = 3, a Debian patch) refuse
# perf_event_open without CAP_SYS_ADMIN, so the two classic tracepoint
# programs (pauses in balance_dirty_pages, inode switches) cannot attach
# under the unit's hardening there: said per program, and nothing else.
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 2 ]; then
	grep -v "tracepoint 'writeback/\(balance_dirty_pages\|inode_switch_wbs\)'\|BPF program path_\(bdp\|switch\) did not attach" \
		/wbg-out/journal-1.txt >/wbg-out/journal-1-other.txt
	check "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid): the classic tracepoints are refused, each said (attach_failed)" \
		sh -c "curl -sf http://127.0.0.1:9573/metrics | grep -c '^wbguard_bpf_program_attached{program=\"path_\(bdp\|switch\)\",reason=\"attach_failed\"} 0' | grep -qx 2"
else
	cp /wbg-out/journal-1.txt /wbg-out/journal-1-other.txt
fi
check "watching, BPF on, no permission errors under the hardening" \
	sh -c "grep -q 'Watching .* BPF on' /wbg-out/journal-1.txt && ! grep -qi 'operation not permitted\|permission denied' /wbg-out/journal-1-other.txt"
check "metrics served" sh -c "curl -sf http://127.0.0.1:9573/metrics | grep -q '^wbguard_bpf_programs_loaded{group=\"dirtied\"} 1'"

# The control API on the system bus, as the shipped policy allows it.
i=0; while ! journalctl -u wbguard.service | grep -q 'Serving the control API as io.wbguard1' && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check "owns io.wbguard1 on the system bus under the policy file" \
	sh -c "journalctl -u wbguard.service | grep -q 'Serving the control API as io.wbguard1 on the system bus'"
busctl introspect io.wbguard1 /io/wbguard1 >/wbg-out/introspect.txt 2>&1
check "busctl introspect shows the methods and properties" \
	sh -c "grep -q '^\.FlushCgroup *method *st *tss' /wbg-out/introspect.txt && grep -q '^\.RegisterContainer *method *sssa{ss}' /wbg-out/introspect.txt && grep -q '^\.DyingWbFallback *property *s' /wbg-out/introspect.txt"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
v=$(nobody busctl get-property io.wbguard1 /io/wbguard1 io.wbguard1.Manager DyingWbFallback 2>&1)
echo "# as nobody: DyingWbFallback = $v"
check "anyone may read the verdict properties" sh -c "echo '$v' | grep -q '^s \"\(missing\|unknown\|active\)\"'"
nobody busctl call io.wbguard1 /io/wbguard1 io.wbguard1.Manager ListCgroups >/wbg-out/nobody-call.txt 2>&1
check "a method call from non-root is denied by the bus policy" \
	sh -c "test $? != 0 && grep -qi 'access denied\|AccessDenied\|not allowed' /wbg-out/nobody-call.txt"
$ctl --system status --json >/wbg-out/status-system.json
check "wbguardctl --system status: the daemon answers on the bus" test "$(jqv /wbg-out/status-system.json .daemon.system_bus)" = true
$ctl status --json >/wbg-out/status-socket.json
check "and on its control socket in the RuntimeDirectory" test "$(jqv /wbg-out/status-socket.json .daemon.version)" = "$(jqv /wbg-out/status-system.json .daemon.version)"

mkdir -p /sys/fs/cgroup/wbgtest/g
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g/cgroup.procs; exec sleep 600' &
g=$!
sleep 1
check "a global pod lowers the sysctl to 200" test "$(cat $sysctl)" = 200
check "the state file is in the RuntimeDirectory" test "$(jq .original /run/wbguard/sysctl.json)" = "$admin"

pid=$(systemctl show -p MainPID --value wbguard.service)
systemctl reload wbguard.service
sleep 1
check "reload keeps the same process" test "$(systemctl show -p MainPID --value wbguard.service)" = "$pid"
check "reload logged" sh -c "journalctl -u wbguard.service | grep -q 'Reloaded'"
# A key this version does not know (a ConfigMap written for a newer one):
# a warning naming it, counted; a value it refuses: systemctl reload fails,
# the metric says so, the running configuration stays.
printf '[flush]\nsome_future_key = 1\n' >/etc/wbguard/conf.d/60-future.conf
systemctl reload wbguard.service
check "a drop-in with an unknown key: systemctl reload succeeds" test $? = 0
check "and the journal names the key, ignored" sh -c "journalctl -u wbguard.service | grep -q \"60-future.conf:2: unknown key 'some_future_key' in section \\[flush\\], ignored\""
check "counted (wbguard_config_unknown_keys 1)" sh -c "curl -sf http://127.0.0.1:9573/metrics | grep -q '^wbguard_config_unknown_keys 1$'"
printf '[flush]\nworkers = lots\n' >/etc/wbguard/conf.d/70-bad.conf
systemctl reload wbguard.service 2>/wbg-out/reload-bad.txt
check "a drop-in with a value it refuses: systemctl reload fails" test $? != 0
check "the journal has the kernel verdicts under their MESSAGE_ID, with fields" \
	sh -c "journalctl MESSAGE_ID=8e9f3341520546d790bc601a609a539b -o json --no-pager | jq -s -e 'any(.[]; .WBGUARD_DYING_WB_FALLBACK != null)' >/dev/null"
check "the journal has the refusal under its MESSAGE_ID" \
	sh -c "journalctl MESSAGE_ID=03d6bab0f6444ea692cc7c44750170e1 --no-pager | grep -q 'refused; the running configuration stays'"
check "the running configuration stays, and the metric says the reload failed" \
	sh -c "systemctl is-active --quiet wbguard.service && curl -sf http://127.0.0.1:9573/metrics | grep -q '^wbguard_config_last_reload_successful 0$'"
/usr/sbin/wbguardd --check-config >/wbg-out/check-config.txt 2>&1
rc=$?
check "wbguardd --check-config: exit 1 ($rc), the file, line and key named" \
	sh -c "[ $rc = 1 ] && grep -q \"70-bad.conf:2: \\[flush\\] workers = 'lots': expected\" /wbg-out/check-config.txt"
rm /etc/wbguard/conf.d/60-future.conf /etc/wbguard/conf.d/70-bad.conf
systemctl reload wbguard.service
check "fixed: reload succeeds again, the metric back to 1" \
	sh -c "curl -sf http://127.0.0.1:9573/metrics | grep -q '^wbguard_config_last_reload_successful 1$'"
# [mitigation] mode by a reload: in effect at once (it was accepted and
# changed nothing), and back
m0=$(wbguardctl status --json | jq -r .daemon.mitigating)
printf '[mitigation]\nmode = off\n' >/etc/wbguard/conf.d/80-off.conf
systemctl reload wbguard.service
m1=$(wbguardctl status --json | jq -r .daemon.mitigating)
rm /etc/wbguard/conf.d/80-off.conf
systemctl reload wbguard.service
m2=$(wbguardctl status --json | jq -r .daemon.mitigating)
echo "# mitigating: $m0, after mode = off and a reload $m1, after its removal and a reload $m2"
check "a reload of [mitigation] mode takes effect (on, off, on)" test "$m0 $m1 $m2" = "true false true"
# a key only a start applies: the reload is refused, naming it (it used
# to report success and keep the old value)
printf '[daemon]\nmax_depth = 31\n' >/etc/wbguard/conf.d/80-depth.conf
wbguardctl reload 2>/wbg-out/reload-restart.txt
rc=$?
echo "# reload changing a restart key: exit $rc: $(cat /wbg-out/reload-restart.txt)"
check "a reload changing [daemon] max_depth is refused, naming the key" \
	sh -c "[ $rc != 0 ] && grep -q '\[daemon\] max_depth changed, which only a restart applies' /wbg-out/reload-restart.txt &&
	       curl -sf http://127.0.0.1:9573/metrics | grep -q '^wbguard_config_last_reload_successful 0$'"
rm /etc/wbguard/conf.d/80-depth.conf
systemctl reload wbguard.service
check "without it, the reload succeeds again" test $? = 0

kill -SEGV "$pid"
i=0
while [ "$(systemctl show -p MainPID --value wbguard.service)" = "$pid" ] || ! systemctl is-active --quiet wbguard.service; do
	[ $i -lt 300 ] || break
	sleep 0.1
	i=$((i + 1))
done
sleep 1
check "after a crash the service is restarted (Restart=on-failure)" systemctl is-active --quiet wbguard.service
check "with a new process" test "$(systemctl show -p MainPID --value wbguard.service)" != "$pid"
check "the new start took the admin's value from the state file, and the pod holds it again" \
	sh -c "journalctl -u wbguard.service | grep -q \"restoring the admin's $admin\" && test \$(cat $sysctl) = 200"

# A handover under the hardening: a file, and a block device's own page
# cache (raw writes to a loop device), written back through a read-only fd
# on the device node (DevicePolicy=closed, DeviceAllow=block-* r).
echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control
mkdir /sys/fs/cgroup/wbgtest/h
truncate -s 64M /mnt/ext4/loop.img
loop=$(losetup -f --show /mnt/ext4/loop.img)
sh -c "echo \$\$ >/sys/fs/cgroup/wbgtest/h/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/h bs=1M count=8 status=none; dd if=/dev/zero of=$loop bs=1M count=8 status=none"
sleep 1
rmdir /sys/fs/cgroup/wbgtest/h # the record is written once the cgroup is gone and cleaned up
# The shipped default is on-evidence: a replacement appending to the file
# is the evidence that has its data, and the loop device's, flushed.
mkdir /sys/fs/cgroup/wbgtest/h2
sh -c "echo \$\$ >/sys/fs/cgroup/wbgtest/h2/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/h bs=1M count=2 oflag=append conv=notrunc status=none"
rmdir /sys/fs/cgroup/wbgtest/h2
i=0
while ! grep -q '"cgroup":"wbgtest/h"' /run/wbguard/handovers.jsonl && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
h=$(grep '"cgroup":"wbgtest/h"' /run/wbguard/handovers.jsonl | tail -1)
echo "# $h"
check "handover under the hardening: flushed on evidence" \
	test "$(echo "$h" | jq -r '"\(.outcome) \(.evidence > 0)"')" = "flushed true"
check "handover under the hardening, without CAP_SYS_ADMIN: debugfs's wb_stats read (dying_wb_clean $(echo "$h" | jq .dying_wb_clean))" \
	test "$(echo "$h" | jq '.dying_wb_clean != null')" = true
check "systemctl status says what it does now ($(systemctl show -p StatusText --value wbguard.service))" \
	sh -c "systemctl show -p StatusText --value wbguard.service | grep -q '^[0-9]* cgroups; .* ended; flush on-evidence; mitigation '"
check "the unit's bounding set has no CAP_SYS_ADMIN" sh -c "! systemctl show -p CapabilityBoundingSet --value wbguard.service | grep -q cap_sys_admin"
check "handover under the hardening: the loop device's page cache too" \
	test "$(echo "$h" | jq '[.target_list[] | select(.how == "bdev")] | length')" -ge 1
hid=$(echo "$h" | jq -r .id)
journalctl -u wbguard.service -o json WBGUARD_CGROUP=/wbgtest/h >/wbg-out/journal-fields.json
check "the journal has the handover with structured fields (cgroup, handover id, outcome)" \
	test "$(jq -r 'select(.WBGUARD_HANDOVER_ID != null) | "\(.WBGUARD_HANDOVER_ID) \(.WBGUARD_OUTCOME) \(.PRIORITY)"' /wbg-out/journal-fields.json | tail -1)" = "$hid flushed 6"
losetup -d "$loop"
rm -f /mnt/ext4/loop.img

systemctl stop wbguard.service
check "stop restores the admin's value" test "$(cat $sysctl)" = "$admin"
check "no state file left" test ! -e /run/wbguard/sysctl.json
kill $g; wait $g 2>/dev/null
rmdir /sys/fs/cgroup/wbgtest/g /sys/fs/cgroup/wbgtest 2>/dev/null

# A local user squatting on the node lock: the file readable, as an older
# wbguardd made it, and a read lock of nobody's on it (an OFD read lock
# conflicts with the daemon's write lock). The next start takes a new file
# and runs; the user cannot open the new one.
lock=/run/wbguard/wbguardd.lock
chmod 0644 $lock
setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c '
import fcntl, struct, sys, time
f = open(sys.argv[1])
fcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack("hhqqixxxx", fcntl.F_RDLCK, 0, 0, 0, 0))
print("held", flush=True)
time.sleep(600)' $lock >/tmp/squat.txt 2>&1 &
sq=$!
i=0; while ! grep -q held /tmp/squat.txt && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
systemctl start wbguard.service
check "a local user's read lock on the old lock file ($(head -c 80 /tmp/squat.txt)) does not keep wbguardd from starting" \
	sh -c "systemctl is-active --quiet wbguard.service && journalctl -u wbguard.service | grep -q 'held by no wbguardd (a read lock.*replacing it'"
check "... whose new lock file is 0600: the user cannot open it ($(stat -c %a $lock))" \
	sh -c "test \$(stat -c %a $lock) = 600 && ! setpriv --reuid=65534 --regid=65534 --clear-groups cat $lock 2>/dev/null"
kill $sq 2>/dev/null; wait $sq 2>/dev/null
systemctl stop wbguard.service

systemd-analyze security wbguard.service --no-pager >/wbg-out/security.txt 2>&1
exposure=$(sed -n 's/.*Overall exposure level for wbguard.service: \([0-9.]*\).*/\1/p' /wbg-out/security.txt)
echo "# systemd-analyze security: exposure $exposure"
check "systemd-analyze security scores it" test -n "$exposure"

# Purged while it holds the sysctl lowered: the admin's value, and no state.
systemctl start wbguard.service
mkdir -p /sys/fs/cgroup/wbgtest/g
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g/cgroup.procs; exec sleep 600' &
g=$!
sleep 1
check "before the purge: lowered to 200 by a pod" test "$(cat $sysctl)" = 200
# Beside another owner of the sysctl (a sysctl.d drop-in applied by
# systemd-sysctl, as tuned or the Node Tuning Operator also write it): its
# value is adopted as the admin's, not fought (not written over while the
# pod still holds it), and it is what stays.
echo 'vm.dirty_expire_centisecs = 1500' >/etc/sysctl.d/90-wbg-test.conf
systemctl restart systemd-sysctl.service
check "systemd-sysctl applied the drop-in (1500)" test "$(cat $sysctl)" = 1500
i=0; while ! journalctl -u wbguard.service | grep -q 'changed to 1500 behind wbguardd.s back' && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "wbguardd adopts it as the admin's value (noticed within its 5 s check)" \
	sh -c "journalctl -u wbguard.service | grep -q 'changed to 1500 behind wbguardd.s back (it had written 200): adopted'"
sleep 2
check "and does not fight it: still 1500 while the pod holds" test "$(cat $sysctl)" = 1500
check "wbguardctl status shows no lowering (1500 is the admin's)" sh -c "$ctl status --json | jq -e '.dirty_expire.current == 1500 and .dirty_expire.lowered == false' >/dev/null"
admin=1500
rm /etc/wbguard/conf.d/50-test.conf && rmdir /etc/wbguard/conf.d # the admin's own: purge leaves those
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q wbguard >/wbg-out/apt-purge.log 2>&1
check "apt purges the package" test $? = 0
check "purged: the admin's sysctl" test "$(cat $sysctl)" = "$admin"
check "purged: no state left (/run/wbguard, /etc/wbguard)" sh -c "test ! -e /run/wbguard && test ! -e /etc/wbguard"
check "purged: no unit, no binaries" sh -c "! systemctl cat wbguard.service >/dev/null 2>&1 && test ! -e /usr/sbin/wbguardd"
kill $g; wait $g 2>/dev/null
rmdir /sys/fs/cgroup/wbgtest/g /sys/fs/cgroup/wbgtest 2>/dev/null
rm -f /etc/sysctl.d/90-wbg-test.conf
true
