# vm: --kernel stock --disks ext4
# SIGKILL along a handover (issue 7): with the writer's death, before
# wbguardd has read it, and at delays after the removal that land in its
# flush, its cleanup batch and dying-wb check, and after its end. After each kill and restart: the
# admin's sysctl is back, no scratch cycle cgroup is left, and no dying wb
# of the removed cgroup still has dirty IO, whichever wbguardd wrote it:
# the killed one, the restart from its pending record, or the restart's
# scan of dying wbs. And, deterministically, a cgroup removed while no
# wbguardd ran is found by that scan.
#
# vm.dirty_writeback_centisecs = 0 for the test: without the periodic
# flusher the kernel leaves a dead writer's last data dirty, so "clean" can
# only come from a flush (a writer's own balance_dirty_pages still writes
# while it runs).
. "$WBG_TOP/tests/vm/lib.sh"
B=$WBG_BUILD
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
wb_centisecs=$(cat /proc/sys/vm/dirty_writeback_centisecs)
echo 0 >/proc/sys/vm/dirty_writeback_centisecs
# Kills along the eager lifecycle (a flush before rmdir): [flush] mode =
# eager. (On-evidence, a dying wb stays dirty by design until the kernel or
# a replacement's evidence acts; evidence.sh covers that.)
cat >/tmp/kp.conf <<EOC
[policy "wbgtest/g"]
dirty_expire = 2s
mechanism = global
[flush]
mode = eager
EOC
mkdir -p /sys/fs/cgroup/wbgtest
echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control
: >/wbg-out/kp.jsonl

# start LOG: wbguardd with the policy, until it watches.
start() {
	rm -f /run/wbguard/handovers.jsonl
	"$B/daemon/wbguardd" --config /tmp/kp.conf >"/wbg-out/$1" 2>&1 &
	DAEMON=$!
	i=0; while ! grep -q '^info: Watching' "/wbg-out/$1" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	grep -q '^info: Watching' "/wbg-out/$1"
}
# keep the records of a wbguardd that is gone
keep() { cat /run/wbguard/handovers.jsonl >>/wbg-out/kp.jsonl 2>/dev/null; }
# dirty_io ID: whether wb_stats shows a wb of cgroup ID with dirty IO
dirty_io() {
	awk -v id="$1" '/^WbCgIno:/ {c = $2} /^WbReclaimable:|^b_dirty:|^b_io:|^b_more_io:/ {if (c == id && $2 > 0) d = 1}
		END {exit !d}' /sys/kernel/debug/bdi/*/wb_stats
}
# writer NAME: a cgroup appending 64 KiB every 50 ms to /mnt/ext4/NAME
writer() {
	mkdir /sys/fs/cgroup/wbgtest/$1
	sh -c "echo \$\$ >/sys/fs/cgroup/wbgtest/$1/cgroup.procs; while :; do dd if=/dev/zero of=/mnt/ext4/$1 bs=64k count=1 oflag=append conv=notrunc status=none; sleep 0.05; done" &
}
# remove NAME: kill its writer, wait for populated 0, rmdir; prints its id
remove() {
	local id i
	id=$(stat -c %i /sys/fs/cgroup/wbgtest/$1)
	echo 1 >/sys/fs/cgroup/wbgtest/$1/cgroup.kill
	i=0; while grep -q 'populated 1' /sys/fs/cgroup/wbgtest/$1/cgroup.events && [ $i -lt 50 ]; do sleep 0.02; i=$((i + 1)); done
	rmdir /sys/fs/cgroup/wbgtest/$1
	echo "$id"
}

r=0
# "pre": killed as the writer is, before wbguardd can have read populated 0
for d in pre 0 0.1 0.3 0.6 1.5; do
	r=$((r + 1))
	start kp-$r.log || { not_ok "round $r: wbguardd starts"; continue; }
	# a pod with a global expiry lowers the sysctl while it runs
	mkdir /sys/fs/cgroup/wbgtest/g
	sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g/cgroup.procs; exec sleep 1000' &
	gp=$!
	i=0; while [ "$(cat $sysctl)" = "$admin" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	lowered=$(cat $sysctl)
	writer w$r
	sleep 1.5
	if [ "$d" = pre ]; then
		echo 1 >/sys/fs/cgroup/wbgtest/w$r/cgroup.kill
		kill -9 $DAEMON
		id=$(remove w$r)
	else
		id=$(remove w$r)
		sleep "$d"
		kill -9 $DAEMON
	fi
	wait $DAEMON 2>/dev/null
	keep
	had_pending=$(ls /run/wbguard/pending-*.json 2>/dev/null | wc -l)
	recorded=$(grep -c "\"cgroup_id\":$id," /wbg-out/kp.jsonl)
	dirty=no; dirty_io "$id" && dirty=yes
	kill $gp; wait $gp 2>/dev/null
	i=0; while grep -q 'populated 1' /sys/fs/cgroup/wbgtest/g/cgroup.events && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	rmdir /sys/fs/cgroup/wbgtest/g
	echo "# round $r: kill $d s after removing w$r (id $id): sysctl was $lowered; at the kill: pending records $had_pending, finished records $recorded, dying wb dirty $dirty"
	start kp-$r-restart.log || { not_ok "round $r: restart"; continue; }
	check "round $r: restart: the admin's sysctl is back" test "$(cat $sysctl)" = "$admin"
	check "round $r: restart: no scratch cycle cgroup left" test -z "$(ls -d /sys/fs/cgroup/wbguard.scratch/cycle-* 2>/dev/null)"
	i=0; while dirty_io "$id" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	if dirty_io "$id"; then not_ok "round $r: w$r's dying wb is clean"; else ok "round $r: w$r's dying wb is clean"; fi
	sleep 0.5
	kill -TERM $DAEMON; wait $DAEMON
	keep
	how=$(jq -r --argjson id "$id" 'select(.cgroup_id == $id) | "\(.trigger):\(.outcome)"' /wbg-out/kp.jsonl | tr '\n' ' ')
	echo "# round $r: records of w$r: ${how:-none}"
	if [ "$dirty" = yes ]; then
		rec=$(jq -r --argjson id "$id" 'select(.cgroup_id == $id and .trigger == "recovered") | .outcome' /wbg-out/kp.jsonl)
		check "round $r: dirty at the kill, so the restart flushed it (trigger recovered, flushed)" \
			test "$(echo "$rec" | grep -c '^flushed$')" -ge 1
	fi
done

# Killed while a pod holds the sysctl lowered, and not started again (a
# package removed, a DaemonSet deleted): wbguardd --restore-sysctl, which
# the package's prerm runs, puts the admin's value back.
start kp-restore.log
mkdir /sys/fs/cgroup/wbgtest/g
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g/cgroup.procs; exec sleep 1000' &
gp=$!
i=0; while [ "$(cat $sysctl)" = "$admin" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 $DAEMON; wait $DAEMON 2>/dev/null
check "killed while a pod held it: the sysctl still lowered ($(cat $sysctl))" test "$(cat $sysctl)" != "$admin"
"$B/daemon/wbguardd" --restore-sysctl --config /tmp/kp.conf 2>/wbg-out/restore.txt
check "wbguardd --restore-sysctl: exit 0, the admin's value back, no state file" \
	sh -c "[ $? = 0 ] && [ \"\$(cat $sysctl)\" = $admin ] && [ ! -e /run/wbguard/sysctl.json ]"
kill $gp; wait $gp 2>/dev/null
i=0; while grep -q 'populated 1' /sys/fs/cgroup/wbgtest/g/cgroup.events && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
rmdir /sys/fs/cgroup/wbgtest/g

# Removed while no wbguardd ran: only the restart's scan of dying wbs can
# know it.
writer gone
sleep 1.5
id=$(remove gone)
sleep 0.3
check "precondition: the removed cgroup's dying wb has dirty IO" dirty_io "$id"
start kp-scan.log
check "wbguardd starts" test $? = 0
await_record "\"cgroup_id\":$id,"
rec=$(grep "\"cgroup_id\":$id," /run/wbguard/handovers.jsonl | tail -1)
echo "# $rec" | cut -c1-300
check "the scan of dying wbs flushed it (trigger recovered, flushed)" \
	test "$(echo "$rec" | jq -r '"\(.trigger) \(.outcome)"')" = "recovered flushed"
check "logged with its cgroup id" grep -q "A dying cgroup (id $id) still has dirty data" /wbg-out/kp-scan.log
i=0; while dirty_io "$id" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if dirty_io "$id"; then not_ok "its dying wb is clean"; else ok "its dying wb is clean"; fi
kill -TERM $DAEMON; wait $DAEMON
echo "$wb_centisecs" >/proc/sys/vm/dirty_writeback_centisecs
