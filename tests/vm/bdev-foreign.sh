# bdev_foreign_dirty: seed 001's case at small scale. Cgroup a dirties a loop
# device's own page cache first (its wb owns the bdev inode), then cgroup b,
# under a small memory.max, dirties much more of it: foreign dirtying of a
# bdev mapping, and foreign flushes once b is over its dirty limit. The loop
# device sits on the ext4 disk: over tmpfs its writeback is so fast that
# reclaim's flusher wakeups keep b under its dirty limit and the kernel
# never gets to a foreign flush. b's memory.max leaves a clear margin:
# with 64M the count of foreign flushes swung between 37 and 0 from one
# daemon build to the next (timing); with 32M: 36 and 31 in two runs.
bdev_foreign_dirty() {
	local cg=/sys/fs/cgroup/bdevfrn dev
	truncate -s 256M /mnt/ext4/bdevfrn.img
	dev=$(losetup -f --show /mnt/ext4/bdevfrn.img) || return 1
	mkdir $cg && echo +memory >$cg/cgroup.subtree_control && mkdir $cg/a $cg/b
	echo 32M >$cg/b/memory.max
	sh -c "echo \$\$ >$cg/a/cgroup.procs; exec dd if=/dev/zero of=$dev bs=1M count=4 status=none"
	sh -c "echo \$\$ >$cg/b/cgroup.procs; exec dd if=/dev/zero of=$dev bs=1M count=96 seek=8 status=none"
	sync
	rmdir $cg/a $cg/b $cg
	losetup -d "$dev"
	rm -f /mnt/ext4/bdevfrn.img
}
