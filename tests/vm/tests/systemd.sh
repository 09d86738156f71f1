# vm: --kernel stock --systemd --disks ""
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
