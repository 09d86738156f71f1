# vm: --kernel stock --disks ext4,xfs
# A tenant's FIFO, socket and device nodes in what it dirtied. mkfifo,
# mknod and bind create inodes on its own volume, which the kernel queues
# on its wb like any file. Such an inode must never be opened: a FIFO's
# open blocks until a writer comes, holding the filesystem's flush slot
# (every other tenant's flush there then waits for its timeout); a device
# node's open runs a driver, and its i_rdev names a host device (here the
# disk of /mnt/xfs) that the tenant never wrote. The exit recipe flushes a
# cgroup's own inodes by handle as it empties: tenant A's set holds the
# special files and a regular file, tenant B on the same filesystem
# empties right after, and its flush must not wait behind A's.
. "$WBG_TOP/tests/vm/lib.sh"
cg=/sys/fs/cgroup/wbgspecial
mkdir -p $cg && echo +memory >$cg/cgroup.subtree_control
record() { grep "\"cgroup\":\"wbgspecial/$1\"" /run/wbguard/handovers.jsonl 2>/dev/null | tail -1; }
wait_record() {
	local i=0
	while [ -z "$(record $1)" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
}
xfs_dev=$(stat -c '%Hd %Ld' /mnt/xfs)

printf '[flush]\nmode = exit\ninode_flush = on\n' >/tmp/exit.conf
daemon_start "$WBG_BUILD" --config /tmp/exit.conf
check "wbguardd starts (exit recipe, inodes by handle)" test $? = 0
scrape_metrics
special0=$(metric wbguard_bpf_special_inodes_total)

mkdir $cg/a $cg/b /mnt/ext4/a /mnt/ext4/b
# tenant A: a FIFO nobody writes, a socket, a character device node it
# writes through (its inode's times change), a block device node naming
# the xfs disk, and 4 MiB of a regular file
sh -c "echo \$\$ >$cg/a/cgroup.procs
	mkfifo /mnt/ext4/a/fifo
	mknod /mnt/ext4/a/null c 1 3 && echo x >/mnt/ext4/a/null
	mknod /mnt/ext4/a/disk b $xfs_dev && touch /mnt/ext4/a/disk
	python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"/mnt/ext4/a/sock\")'
	dd if=/dev/zero of=/mnt/ext4/a/data bs=1M count=4 status=none"
check "tenant A made a FIFO, a socket and two device nodes" \
	sh -c 'test -p /mnt/ext4/a/fifo && test -S /mnt/ext4/a/sock && test -c /mnt/ext4/a/null && test -b /mnt/ext4/a/disk'
# tenant B: its own file on the same filesystem, emptied right after A
sh -c "echo \$\$ >$cg/b/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/b/data bs=1M count=4 status=none"
rmdir $cg/a $cg/b
wait_record a
wait_record b
a=$(record a)
b=$(record b)
echo "# A: $(echo "$a" | jq -c '{outcome, reason, inodes_synced, inodes_skipped, flushed_s, target_list}')"
echo "# B: $(echo "$b" | jq -c '{outcome, reason, inodes_synced, first_flush_s, flushed_s}')"
scrape_metrics
echo "# special inodes BPF saw and did not record: $(( $(metric wbguard_bpf_special_inodes_total) - special0 )); skipped in user space: $(metric wbguard_flush_inodes_skipped_total)"
check "BPF saw A's special inodes and recorded none of them (at least 4)" \
	test $(( $(metric wbguard_bpf_special_inodes_total) - special0 )) -ge 4
check "A: flushed, its regular file written by handle" \
	test "$(echo "$a" | jq -r '"\(.outcome) \(.inodes_synced >= 1)"')" = "flushed true"
check "A: the device node's disk (the xfs filesystem) is no target of its" \
	test "$(echo "$a" | jq '[.target_list[]? | select(.mount == "/mnt/xfs" or .kind == "bdev")] | length')" = 0
check "B: flushed on the same filesystem within a second of its trigger" \
	test "$(echo "$b" | jq -r '"\(.outcome) \((.flushed_s // 99) < 1)"')" = "flushed true"
check "no flush stuck" test "$(metric wbguard_flush_stuck_total)" = 0
daemon_stop
