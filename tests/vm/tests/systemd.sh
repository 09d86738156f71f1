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
# is stopped; the stop job starts the flush before its cgroup is removed.
systemd-run --quiet --unit=wbguard-test -p Delegate=yes -p Type=notify \
	"$WBG_BUILD/daemon/wbguardd" --log-level=debug
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
