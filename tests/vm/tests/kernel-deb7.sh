# vm: --kernel deb7 --disks ext4
# vm-paced: its reproductions write at a set rate for set seconds (under one host core busy)
# Debian's newest 7.x (trixie-backports): none of the three fixes is in it
# and cgroup_writeback_by_id() still returns -ENOENT for a dying wb, while
# the records wbguard reads changed around it (tracepoint fields widened
# to u64 and moved, inode.i_state behind accessors, the foreign-flush
# reason renumbered, a per-wb inode-switch queue): the BPF object built
# against 6.12's BTF must load through CO-RE alone, and the stall be seen
# and mitigated.
. "$WBG_TOP/tests/vm/lib.sh"
check "kernel is 7.x" test "$(uname -r | cut -d. -f1)" = 7
kernel_matrix
check "7.x: verify says the dying-wb fallback is missing (exit 1)" \
	sh -c "[ $VERIFY_RC = 1 ] && [ \"\$(jq -r .dying_wb_fallback.state /wbg-out/verify.json)\" = missing ]"
check "7.x: the unguarded replacement's foreign flushes get -ENOENT ($KM_ENOENT_OFF)" test "$KM_ENOENT_OFF" -gt 0
check "7.x: with wbguardd, -ENOENT under a quarter of the unguarded run's ($KM_ENOENT_ON of $KM_ENOENT_OFF)" \
	awk -v e="$KM_ENOENT_ON" -v u="$KM_ENOENT_OFF" 'BEGIN { exit !(u > 0 && e * 4 < u) }'
