# vm: --kernel stock --systemd --disks ext4
# systemd as PID 1 with D-Bus: a transient scope's cgroup appears and vanishes.
. "$WBG_TOP/tests/vm/lib.sh"
check "systemd is PID 1" test "$(cat /proc/1/comm)" = systemd
check "system bus answers" busctl --system status >/dev/null
inotifywait -m -q -e create,delete --format '%e %f' /sys/fs/cgroup/system.slice >/tmp/ev.txt &
w=$!
sleep 2
systemd-run --quiet --scope --unit=wbg-probe true
check "systemd-run --scope true" test $? = 0
sleep 2
kill $w
cat /tmp/ev.txt | sed 's/^/# /'
check "scope cgroup appeared" grep -qx 'CREATE,ISDIR wbg-probe.scope' /tmp/ev.txt
check "scope cgroup vanished" grep -qx 'DELETE,ISDIR wbg-probe.scope' /tmp/ev.txt
check "scope cgroup is gone now" test ! -e /sys/fs/cgroup/system.slice/wbg-probe.scope

# wbguardd as a delegated service: a unit with MemoryMax= that dirties files
# is stopped; in eager mode the stop job starts the flush before its cgroup
# is removed.
printf '[flush]\nmode = eager\n' >/tmp/eager.conf
systemd-run --quiet --unit=wbguard-test -p Delegate=yes -p Type=notify \
	"$WBG_BUILD/daemon/wbguardd" --log-level=debug --config /tmp/eager.conf
check "wbguardd runs as a Type=notify service" systemctl is-active --quiet wbguard-test
check "wbguardd's scratch cgroup is inside its delegated subtree" \
	test -d /sys/fs/cgroup/system.slice/wbguard-test.service/scratch
check "wbguardd subscribed to systemd" sh -c "journalctl -u wbguard-test | grep -q 'Subscribed to systemd'"
check "the existing tree was walked" sh -c "journalctl -u wbguard-test | grep -q 'Walked /sys/fs/cgroup, 32 levels deep'"
# The bus goes away and comes back: wbguardd subscribes again.
systemctl restart dbus.service
sleep 4
check "wbguardd resubscribes after the bus restarts" \
	sh -c "test \$(journalctl -u wbguard-test | grep -c 'Subscribed to systemd') -ge 2"
# Other clients coming and going on the bus are no news to wbguardd: its
# NameOwnerChanged match names systemd (arg0), so they wake nothing.
before=$(journalctl -u wbguard-test | grep -c 'NameOwnerChanged for')
for i in 1 2 3 4 5; do busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetId >/dev/null; done
sleep 1
after=$(journalctl -u wbguard-test | grep -c 'NameOwnerChanged for')
check "five other bus clients came and went: wbguardd did nothing ($before -> $after)" test "$before" = "$after"
mkdir -p /mnt/ext4/svc
# Like a real service, it takes a moment to shut down on SIGTERM.
systemd-run --quiet --unit=dirtier -p MemoryMax=256M sh -c \
	'trap "sleep 0.5; exit 0" TERM; for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/mnt/ext4/svc/f$i bs=1M count=4 status=none; done; sleep 600 & wait'
sleep 3
grep file_dirty /sys/fs/cgroup/system.slice/dirtier.service/memory.stat | sed 's/^/# dirtier: /'
systemctl stop dirtier
sleep 3
check "dirtier's cgroup is gone" test ! -e /sys/fs/cgroup/system.slice/dirtier.service
systemctl stop wbguard-test
check "wbguardd stopped cleanly" sh -c "! systemctl is-failed --quiet wbguard-test"
h=$(grep '"cgroup":"system.slice/dirtier.service"' /run/wbguard/handovers.jsonl | head -1)
echo "# $h"
journalctl -u wbguard-test --no-pager | tail -n 20 | sed 's/^/# log: /'
check "dirtier: handover triggered by the stop job" test "$(echo "$h" | jq -r .trigger)" = job
check "dirtier: flushed" test "$(echo "$h" | jq -r .outcome)" = flushed
check "dirtier: flush started before its cgroup was removed" \
	test "$(echo "$h" | jq -r '(.first_flush_s // 99) < (.removed_s // 0)')" = true
check "dirtier: identity is the systemd unit" test "$(echo "$h" | jq -r .unit)" = dirtier.service
check "scratch cgroup removed with the service" test ! -e /sys/fs/cgroup/system.slice/wbguard-test.service

# The same stop in the default mode, on-evidence: the stop job starts the
# handover, nothing is written at the stop, and when a replacement unit
# appends to the files the stopped one left dirty, their data is flushed
# at once and the dying wb cleaned up.
# The kernel's periodic flusher is off meanwhile: a fresh memcg's data is
# written within seconds, and the dying wb would drain by itself (ending
# "drained") before the replacement comes.
wb_centisecs=$(cat /proc/sys/vm/dirty_writeback_centisecs)
echo 0 >/proc/sys/vm/dirty_writeback_centisecs
rm -f /run/wbguard/handovers.jsonl
systemd-run --quiet --unit=wbguard-ev -p Delegate=yes -p Type=notify "$WBG_BUILD/daemon/wbguardd" --log-level=debug
check "on-evidence: wbguardd runs" systemctl is-active --quiet wbguard-ev
check "on-evidence: the mode in effect is logged" sh -c "journalctl -u wbguard-ev | grep -q 'Flush mode: on-evidence'"
systemd-run --quiet --unit=dirtier2 -p MemoryMax=256M sh -c \
	'trap "sleep 0.5; exit 0" TERM; for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/mnt/ext4/svc/g$i bs=1M count=2 status=none; done; sleep 600 & wait'
sleep 3
w0=$(awk '{print $7}' /sys/block/vda/stat)
systemctl stop dirtier2
sleep 1
w1=$(awk '{print $7}' /sys/block/vda/stat)
check "on-evidence: dirtier2's cgroup is gone" test ! -e /sys/fs/cgroup/system.slice/dirtier2.service
check "on-evidence: its handover is open (watched), not recorded yet" \
	sh -c "! grep -q '\"cgroup\":\"system.slice/dirtier2.service\"' /run/wbguard/handovers.jsonl 2>/dev/null"
echo "# device sectors written during the stop: $((w1 - w0))"
systemd-run --quiet --unit=replacement -p MemoryMax=256M sh -c \
	'for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/mnt/ext4/svc/g$i bs=1M count=1 oflag=append conv=notrunc status=none; done'
sleep 1
echo $wb_centisecs >/proc/sys/vm/dirty_writeback_centisecs
# (its end waits for the dying wb to be clean: the replacement's own last
# pages on it, if any, drain within an expiry)
await_record '"cgroup":"system.slice/dirtier2.service"' 600
echo "# recorded $((WAITED / 10)) s after the replacement"
h=$(grep '"cgroup":"system.slice/dirtier2.service"' /run/wbguard/handovers.jsonl | head -1)
echo "# $h"
journalctl -u wbguard-ev --no-pager | grep -E 'Evidence|dirtier2' | head -5 | sed 's/^/# log: /'
check "on-evidence: handover triggered by the stop job" test "$(echo "$h" | jq -r .trigger)" = job
check "on-evidence: flushed once the replacement dirtied its files" \
	test "$(echo "$h" | jq -r '"\(.outcome) \(.evidence > 0) \(.evidence_flushes > 0)"')" = "flushed true true"
check "on-evidence: nothing flushed before the removal" \
	test "$(echo "$h" | jq -r '(.first_flush_s // 0) > (.removed_s // 99)')" = true
check "on-evidence: cleanup re-run, the dying wb clean" \
	test "$(echo "$h" | jq -r '"\(.cleanup_rerun) \(.dying_wb_clean)"')" = "true true"
systemctl stop wbguard-ev
check "on-evidence: wbguardd stopped cleanly" sh -c "! systemctl is-failed --quiet wbguard-ev"

# The same stop with the exit recipe: the stop job starts the handover, and
# the unit's own files are written (by inode, no syncfs) before its cgroup
# is removed; its removal is then watched (for what the flush missed: the
# inodes stay on the dead wb's dirty list until the kernel's writeback
# visits them, tests/README.md). Stopping wbguardd records it as it stands.
rm -f /run/wbguard/handovers.jsonl
printf '[flush]\nmode = exit\n' >/tmp/exit.conf
systemd-run --quiet --unit=wbguard-exit -p Delegate=yes -p Type=notify \
	"$WBG_BUILD/daemon/wbguardd" --log-level=debug --config /tmp/exit.conf
check "exit: wbguardd runs, the mode logged" sh -c "journalctl -u wbguard-exit | grep -q 'Flush mode: exit'"
systemd-run --quiet --unit=dirtier3 -p MemoryMax=256M sh -c \
	'trap "sleep 0.5; exit 0" TERM; for i in 1 2 3 4; do dd if=/dev/zero of=/mnt/ext4/svc/x$i bs=1M count=2 status=none; done; sleep 600 & wait'
sleep 3
systemctl stop dirtier3
i=0
while [ -e /sys/fs/cgroup/system.slice/dirtier3.service ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
systemctl stop wbguard-exit
check "exit: wbguardd stopped cleanly" sh -c "! systemctl is-failed --quiet wbguard-exit"
h=$(grep '"cgroup":"system.slice/dirtier3.service"' /run/wbguard/handovers.jsonl | head -1)
echo "# $h"
check "exit: handover triggered by the stop job, the exit recipe's" \
	test "$(echo "$h" | jq -r '"\(.trigger) \(.recipe)"')" = "job exit"
check "exit: its own inodes flushed (no syncfs) before its cgroup was removed" \
	test "$(echo "$h" | jq -r '"\(.inode_targets > 0) \(.fs_targets) \(.inodes_synced >= 4) \((.first_flush_s // 99) < (.removed_s // 0))"')" = "true 0 true true"
check "exit: its removal was watched" test "$(echo "$h" | jq -r 'has("evidence")')" = true
