# vm: --kernel stock --disks ext4
# Faults: BPF not permitted, debugfs and tracefs not mounted, a full state
# directory, a filesystem whose writeback hangs (a dm device suspended
# without flushing), SIGKILL in the middle of that flush. wbguardd keeps
# running, says what it lacks, keeps its loop and watchdog going, and a
# restart leaves no sysctl changed, no scratch cycle behind and no flush
# forgotten.
. "$WBG_TOP/tests/vm/lib.sh"
# Faults of the flush itself: [flush] mode = eager, so that every removal
# flushes at once (evidence.sh covers on-evidence).
export WBG_FLUSH_MODE=eager
B=$WBG_BUILD
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
mkdir -p /sys/fs/cgroup/wbgtest && echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control
# one_removal NAME DIR: a cgroup writes 8 MiB in DIR, exits, is removed;
# prints wbguardd's record of it.
one_removal() {
	local cg=/sys/fs/cgroup/wbgtest/$1 i
	mkdir $cg
	sh -c "echo \$\$ >$cg/cgroup.procs; dd if=/dev/zero of=$2/$1 bs=1M count=8 status=none"
	sleep 0.5
	rmdir $cg
	await_record "\"cgroup\":\"wbgtest/$1\""
	grep "\"cgroup\":\"wbgtest/$1\"" /run/wbguard/handovers.jsonl | tail -1
}

# 1. BPF not permitted: no CAP_BPF, CAP_PERFMON or CAP_SYS_ADMIN.
setpriv --bounding-set=-bpf,-perfmon,-sys_admin --inh-caps=-all true 2>/dev/null
DAEMON_WRAP="setpriv --bounding-set=-bpf,-perfmon,-sys_admin"
rm -f /run/wbguard/handovers.jsonl
$DAEMON_WRAP $B/daemon/wbguardd --log-level=info >/wbg-out/nobpf.log 2>&1 &
DAEMON=$!
i=0; while ! grep -q '^info: Watching' /wbg-out/nobpf.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check "no BPF permitted: it starts and watches" grep -q '^info: Watching .* BPF off' /wbg-out/nobpf.log
check "and says why the counters are missing" grep -q 'BPF unavailable' /wbg-out/nobpf.log
scrape_metrics
check "metrics: no BPF program group loaded" sh -c "! grep -q '^wbguard_bpf_programs_loaded{.*} 1' /wbg-out/metrics.txt && grep -q '^wbguard_bpf_programs_loaded{.*} 0' /wbg-out/metrics.txt"
rec=$(one_removal nobpf /mnt/ext4)
echo "# $rec" | cut -c1-200
check "a removal is still flushed (the filesystems its mount namespace had)" \
	test "$(echo "$rec" | jq -r '"\(.outcome) \(.plan)"')" = "flushed mountns"
daemon_stop

# 2. debugfs and tracefs not mounted.
umount /sys/kernel/debug 2>/dev/null; umount /sys/kernel/tracing 2>/dev/null
check "debugfs and tracefs unmounted for the test" sh -c "! mountpoint -q /sys/kernel/debug && ! mountpoint -q /sys/kernel/tracing"
daemon_start $B
check "no debugfs/tracefs: it starts" test $? = 0
scrape_metrics
grep '^wbguard_bpf_program_attached{program="path_bdp"' /wbg-out/metrics.txt | sed 's/^/# /'
check "the classic tracepoints say why they are missing" grep -q '^wbguard_bpf_program_attached{program="path_bdp",reason="attach_failed"} 0' /wbg-out/metrics.txt
rec=$(one_removal nodebugfs /mnt/ext4)
check "a removal is flushed; the dying-wb check is left out, not failed" \
	test "$(echo "$rec" | jq -r '"\(.outcome) \(.dying_wb_clean // "absent")"')" = "flushed absent"
daemon_stop
mount -t debugfs debugfs /sys/kernel/debug; mount -t tracefs tracefs /sys/kernel/tracing

# 3. A full state directory: the sysctl is not lowered without its saved
# original, the records cannot be written; it keeps running.
mkdir -p /tmp/full && mount -t tmpfs -o size=4k tmpfs /tmp/full && dd if=/dev/zero of=/tmp/full/fill bs=4k count=1 status=none 2>/dev/null
printf '[daemon]\nstate_dir = /tmp/full\n[policy "wbgtest/g*"]\ndirty_expire = 2s\nmechanism = global\n' >/tmp/full.conf
daemon_start $B --config /tmp/full.conf
check "full state directory: it starts" test $? = 0
mkdir /sys/fs/cgroup/wbgtest/g1
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g1/cgroup.procs; exec sleep 30' &
g=$!
sleep 1.5
check "the sysctl is not lowered without a saved original" test "$(cat $sysctl)" = "$admin"
scrape_metrics
check "counted: wbguard_sysctl_errors_total" fgt "$(metric wbguard_sysctl_errors_total)" 0
grep -i 'state\|No space' /wbg-out/wbguardd.log | head -3 | sed 's/^/# /'
kill $g; wait $g 2>/dev/null; rmdir /sys/fs/cgroup/wbgtest/g1
check "still alive" kill -0 $DAEMON
daemon_stop
umount /tmp/full

# 4. Writeback that hangs: ext4 on a dm device suspended without flushing
# (I/O queues until resume). Flush timeout 3 s; the watchdog is watched by
# a notify socket of our own.
truncate -s 64M /mnt/ext4/slow.img
lo=$(losetup -f --show /mnt/ext4/slow.img)
dmsetup create wbgslow --table "0 $(blockdev --getsz $lo) linear $lo 0" && dmsetup mknodes wbgslow
mkfs.ext4 -q /dev/mapper/wbgslow && mkdir -p /mnt/slow && mount /dev/mapper/wbgslow /mnt/slow
python3 -c '
import socket, time, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/wbg-notify")
with open("/wbg-out/notify.txt", "w", buffering=1) as f:
    while True:
        m = s.recv(4096).decode()
        f.write("%.2f %s\n" % (time.monotonic(), m.replace("\n", " ")))
' &
notifier=$!
sleep 0.5
printf '[flush]\ntimeout_sec = 8\nmode = eager\n' >/tmp/hang.conf
rm -f /run/wbguard/handovers.jsonl
NOTIFY_SOCKET=/run/wbg-notify WATCHDOG_USEC=2000000 sh -c 'export WATCHDOG_PID=$$; exec '"$B"'/daemon/wbguardd --config /tmp/hang.conf' >/wbg-out/wbguardd.log 2>&1 &
DAEMON=$!
i=0; while ! grep -q '^info: Watching' /wbg-out/wbguardd.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
# writer CGROUP FILE: appends 64 KiB every 50 ms (a fresh memcg's data is
# written within about a second, so the data must keep coming).
writer() {
	mkdir /sys/fs/cgroup/wbgtest/$1
	sh -c "echo \$\$ >/sys/fs/cgroup/wbgtest/$1/cgroup.procs; while :; do dd if=/dev/zero of=$2 bs=64k count=1 oflag=append conv=notrunc status=none; sleep 0.05; done" &
}
writer h /mnt/slow/h
sleep 1
dmsetup suspend --nolockfs --noflush wbgslow
check "the dm device is suspended (its I/O queues)" sh -c "dmsetup info wbgslow | grep -q SUSPENDED"
sleep 1
t0=$(date +%s.%N)
echo 1 >/sys/fs/cgroup/wbgtest/h/cgroup.kill # populated 0: the flush starts and hangs
sleep 0.2
grep -E '^file_(dirty|writeback) ' /sys/fs/cgroup/wbgtest/h/memory.stat | tr '\n' ' ' | sed 's/^/# h at its end: /'; echo
# Callers waiting for the hung flush, then killed (as a hook past its own
# timeout is): their waiter slots go with their connections, not when the
# flush ends (256 killed hooks used to fill the table).
waiters=""
for i in 1 2 3 4 5 6 7 8; do
	$B/daemon/wbguardctl flush --wait --timeout 60 /wbgtest/h >/dev/null 2>&1 &
	waiters="$waiters $!"
done
i=0; while [ "$(curl -sf -m 2 http://127.0.0.1:9573/metrics | awk '$1 == "wbguard_flush_waiters" {print $2}')" != 8 ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
scrape_metrics
check "eight callers wait for the hung flush" test "$(metric wbguard_flush_waiters)" = 8
kill -9 $waiters
wait $waiters 2>/dev/null
sleep 0.3
scrape_metrics
check "killed, their waiters are gone at once, while the flush still hangs" test "$(metric wbguard_flush_waiters)" = 0
sleep 1
# Answered while the flush still hangs (the scrape itself shows it in
# progress), not when it has ended: how fast is the benchmarks' business.
s=$(date +%s.%N); curl -sf -m 10 http://127.0.0.1:9573/metrics >/wbg-out/metrics-hang.txt; e=$(date +%s.%N)
echo "# metrics answered in $(awk -v a=$s -v b=$e 'BEGIN{printf "%.3f", b-a}') s during the hang"
check "the event loop answers during the hang (a scrape that shows the hung handover still active)" \
	grep -q '^wbguard_handovers_active [1-9]' /wbg-out/metrics-hang.txt
check "and the control API" sh -c "timeout 10 $B/daemon/wbguardctl status >/dev/null"
rec=$(one_removal other /mnt/ext4)
check "another cgroup's flush on another filesystem goes on meanwhile (a worker is free)" \
	test "$(echo "$rec" | jq -r .outcome)" = flushed
sleep 3
rmdir /sys/fs/cgroup/wbgtest/h
i=0; while ! grep -q '"cgroup":"wbgtest/h"' /run/wbguard/handovers.jsonl && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
rec=$(grep '"cgroup":"wbgtest/h"' /run/wbguard/handovers.jsonl | tail -1)
echo "# $rec" | cut -c1-300
check "the hung flush ends as timeout, recorded with its reason" test "$(echo "$rec" | jq -r .outcome)" = timeout
pings=$(awk -v t0=$t0 '/WATCHDOG=1/' /wbg-out/notify.txt | wc -l)
check "the watchdog kept being fed during the hang ($pings pings)" test "$pings" -ge 3
check "the boost holds the sysctl for the timed-out removal (fallback missing)" test "$(cat $sysctl)" = 500
# A second hung flush, then SIGKILL in the middle of it. The device is
# resumed first: after ten seconds suspended, ext4's journal holds new
# writers in uninterruptible sleep, so a writer started now could not be
# killed (populated would stay 1 and the cgroup could not be removed).
dmsetup resume wbgslow
# hung_end NAME: a writer on the slow filesystem, the device suspended, the
# writer killed: its handover's flush starts and hangs.
hung_end() {
	writer $1 /mnt/slow/$1
	sleep 1
	dmsetup suspend --nolockfs --noflush wbgslow
	sleep 0.5
	echo 1 >/sys/fs/cgroup/wbgtest/$1/cgroup.kill
	i=0; while grep -q 'populated 1' /sys/fs/cgroup/wbgtest/$1/cgroup.events && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}
hung_end k
check "k: its writer is killed (populated 0)" grep -q 'populated 0' /sys/fs/cgroup/wbgtest/k/cgroup.events
rmdir /sys/fs/cgroup/wbgtest/k
check "k: removed" test ! -d /sys/fs/cgroup/wbgtest/k
sleep 0.5
ls /run/wbguard/pending-*.json >/wbg-out/pending.txt 2>/dev/null
check "the flush in flight is on disk (pending-*.json)" grep -q pending- /wbg-out/pending.txt
kill -9 $DAEMON
dmsetup resume wbgslow # the stuck worker thread returns; the killed process can exit
wait $DAEMON 2>/dev/null
echo "# scratch cycles left by the kill: $(ls -d /sys/fs/cgroup/wbguard.scratch/cycle-* 2>/dev/null | wc -l)"
NOTIFY_SOCKET=/run/wbg-notify WATCHDOG_USEC=2000000 sh -c 'export WATCHDOG_PID=$$; exec '"$B"'/daemon/wbguardd --config /tmp/hang.conf' >/wbg-out/restart.log 2>&1 &
DAEMON=$!
i=0; while ! grep -q '^info: Watching' /wbg-out/restart.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check "restart: the admin's sysctl is back" test "$(cat $sysctl)" = "$admin"
check "restart: no scratch cycle cgroup left behind" test -z "$(ls -d /sys/fs/cgroup/wbguard.scratch/cycle-* 2>/dev/null)"
i=0; while ! grep -q '"trigger":"recovered"' /run/wbguard/handovers.jsonl && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
rec=$(grep '"trigger":"recovered"' /run/wbguard/handovers.jsonl | tail -1)
echo "# $rec" | cut -c1-300
check "restart: the interrupted flush is redone (trigger recovered, flushed)" \
	test "$(echo "$rec" | jq -r '"\(.cgroup) \(.outcome)"')" = "wbgtest/k flushed"
check "restart: logged" grep -q 'was in flight when the previous wbguardd stopped' /wbg-out/restart.log
check "restart: no pending record left" test -z "$(ls /run/wbguard/pending-*.json 2>/dev/null)"
# Stopping (SIGTERM) in the middle of a hung flush: the handover is recorded
# as interrupted, not flushed (the next start redoes it), it boosts nothing,
# and wbguardd ends with the admin's value and no state file.
hung_end s
sleep 1 # its flush has started, and hangs
kill -TERM $DAEMON
i=0; while ! grep -q '"cgroup":"wbgtest/s"' /run/wbguard/handovers.jsonl && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1
rec=$(grep '"cgroup":"wbgtest/s"' /run/wbguard/handovers.jsonl | tail -1)
echo "# $rec" | cut -c1-300
check "SIGTERM mid-flush: the handover is recorded as interrupted" test "$(echo "$rec" | jq -r .outcome)" = interrupted
check "SIGTERM mid-flush: the admin's sysctl at exit" test "$(cat $sysctl)" = "$admin"
check "SIGTERM mid-flush: no sysctl state file left" test ! -e /run/wbguard/sysctl.json
check "SIGTERM mid-flush: its pending record kept for the next start" test -n "$(ls /run/wbguard/pending-*.json 2>/dev/null)"
dmsetup resume wbgslow
wait $DAEMON 2>/dev/null
rmdir /sys/fs/cgroup/wbgtest/s
kill $notifier 2>/dev/null
umount /mnt/slow; dmsetup remove wbgslow; losetup -d $lo
