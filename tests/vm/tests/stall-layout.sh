# vm: --kernel stock --disks gptlvm,btrfs
# vm-paced: its reproductions write at a set rate for set seconds (under one host core busy)
# A node's disk layout instead of a bare disk (test-disks gptlvm): ext4 on
# a GPT partition, whose writeback the kernel names after the whole disk
# (a partition has no bdi of its own: wb_stats and the stall's
# cgroup_writeback_by_id() say 254:0 for a filesystem on 254:1), and xfs
# on an LVM volume over the other partition (device-mapper: a bdi of its
# own, stacked). On each, lib.sh's cases that start from a device rather
# than from what BPF recorded of the cgroup: the stall itself (no
# wb_stats, wbguardd down at the removal), the restart's scan of dying
# wbs, and kill -9 while watched. Before the planner resolved a disk to
# the filesystems on its partitions, the first two ended no-targets on
# ext4 here.
. "$WBG_TOP/tests/vm/lib.sh"

ext4_dev=$(stat -c '%Hd:%Ld' /mnt/ext4)
xfs_dev=$(stat -c '%Hd:%Ld' /mnt/xfs)
echo "# ext4 on $ext4_dev, xfs on $xfs_dev; bdis: $(ls /sys/kernel/debug/bdi | paste -sd' ')"
check "layout: ext4 on a partition (sysfs 'partition')" test -f "/sys/dev/block/$ext4_dev/partition"
check "layout: xfs on a device-mapper volume over a partition" \
	sh -c "[ -d /sys/dev/block/$xfs_dev/dm ] && ls /sys/dev/block/$xfs_dev/slaves | grep -q '[0-9]\$'"
disk=$(cat "/sys/dev/block/$ext4_dev/../dev")
check "layout: the partition has no bdi of its own, its disk has ($disk)" \
	sh -c "[ ! -d /sys/kernel/debug/bdi/$ext4_dev ] && [ -d /sys/kernel/debug/bdi/$disk ]"

# cases FS: the unguarded run, the control, then the three cases on the
# filesystem at /mnt/FS, each judged against that unguarded run.
cases() {
	local fs=$1 wb attempt r h dev
	dev=$(stat -c '%Hd:%Ld' /mnt/$fs)
	STALL_RUN="--files 50 --old-secs 3 --new-secs 12 --parent-max 512M --dir /mnt/$fs --mode removed"
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	for attempt in 1 2; do
		"$WBG_BUILD/tests/wbstall" $STALL_RUN --deadline 24 --json /wbg-out/stalled-$fs.json >/dev/null
		r=/wbg-out/stalled-$fs.json
		[ -n "$(jqv $r '.cgroup_writeback_by_id.old_target.enoent')" ] && break
		echo "# $fs unguarded (attempt $attempt): no foreign flush hit the dying wb (old data dirty at removal $(jqv $r .old.file_dirty_at_removal) B)"
	done
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
	echo "# $fs unguarded: -ENOENT $(jqv $r '.cgroup_writeback_by_id.old_target.enoent // 0'), replacement worst lag $(jqv $r .new.worst_lag_s) s"
	check "$fs: unguarded, the replacement's foreign flushes to the removed cgroup get -ENOENT" \
		test "$(jqv $r '.cgroup_writeback_by_id.old_target.enoent // 0')" -gt 0
	stall_control
	unseen_removals $r 1
	# (the stall's record of a cgroup removed while wbguardd was down may
	# name no path: the only stall-triggered one of that run)
	h=$(jq -c 'select(.trigger == "stall")' /run/wbguard/handovers.jsonl 2>/dev/null | tail -1)
	echo "# $fs stall handover: $(echo "$h" | jq -c '{cgroup, outcome, targets, target_list}' 2>/dev/null)"
	# (jq -e passes on no output at all: a count instead)
	check "$fs: the stall handover flushed the filesystem at /mnt/$fs ($dev, its bdi $(cat /sys/dev/block/$dev/../dev 2>/dev/null || echo "$dev"))" \
		test "$(echo "$h" | jq --arg d "$dev" '[select(.outcome == "flushed") | .target_list[] | select(.dev == $d)] | length')" = 1
	unseen_removals $r
	kill_while_watched $r
}

# lib.sh's cases stop wbguardd and start it again: each keeps the records
# of its own runs in /run/wbguard (the handovers file is appended to)
cases ext4
cases xfs

# btrfs (on a disk of its own): it takes part in cgroup writeback (its
# wb_stats list the cgroups' wbs), but its bdi is the filesystem's own,
# named "btrfs-N", not a device number, and a stall or a wb_stats
# directory names that. The two cases that start from the bdi's name: the
# stall itself, and the restart's scan of dying wbs. Before wbguardd
# matched btrfs-N to its mount (/sys/fs/btrfs/<fsid>/bdi and devices/, the
# mount's source device), the stall's handover ended no-targets ("on 0:0")
# and the scan skipped the wb. Checked: that the stall's handover flushes
# the btrfs filesystem and the scan's recovers it; the replacement's
# -ENOENT and lag are measured, not judged: the cure is a syncfs, a btrfs
# transaction commit the writer waits on, and with the suite's other paced
# guest and the hygiene run beside it the stall's case left 1,323 of the
# unguarded 2,270 -ENOENT, worst lag 7.75 s against 3.04 s unguarded
# (alone: 34 of 2,548, 0.042 s; tests/README).
bdi=$(basename "$(readlink /sys/fs/btrfs/*-*/bdi)")
echo "# btrfs: mounted from 0:$(awk '$5 == "/mnt/btrfs" {print $3}' /proc/self/mountinfo | cut -d: -f2), its bdi $bdi"
check "btrfs: its bdi has a name of its own ($bdi) with the cgroups' wbs in its wb_stats" \
	sh -c "case '$bdi' in btrfs-*) grep -q WbCgIno /sys/kernel/debug/bdi/$bdi/wb_stats ;; *) false ;; esac"
STALL_RUN="--files 50 --old-secs 3 --new-secs 12 --parent-max 512M --dir /mnt/btrfs --mode removed"
wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
echo 0 >/proc/sys/vm/dirty_writeback_centisecs
"$WBG_BUILD/tests/wbstall" $STALL_RUN --deadline 24 --json /wbg-out/stalled-btrfs.json >/dev/null
echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
r=/wbg-out/stalled-btrfs.json
echo "# btrfs unguarded: -ENOENT $(jqv $r '.cgroup_writeback_by_id.old_target.enoent // 0'), replacement worst lag $(jqv $r .new.worst_lag_s) s"
check "btrfs: unguarded, the replacement's foreign flushes to the removed cgroup get -ENOENT" \
	test "$(jqv $r '.cgroup_writeback_by_id.old_target.enoent // 0')" -gt 0
STALL_MEASURE_ONLY="btrfs' syncfs, under load"
unseen_removals $r 1
h=$(jq -c 'select(.trigger == "stall")' /run/wbguard/handovers.jsonl 2>/dev/null | tail -1)
echo "# btrfs stall handover: $(echo "$h" | jq -c '{outcome, targets, target_list}' 2>/dev/null)"
check "btrfs: the stall handover flushed the filesystem at /mnt/btrfs" \
	test "$(echo "$h" | jq '[select(.outcome == "flushed") | .target_list[] | select(.fstype == "btrfs")] | length')" = 1
unseen_removals $r
STALL_MEASURE_ONLY=
