# vm: --kernel deb618 --disks ext4
# vm-paced: its reproductions write at a set rate for set seconds (under one host core busy)
# Debian's 6.18 (trixie-backports' newest build of it), the long-term
# kernel the reporters of the dying-wb stall run: none of the fixes is in
# it. The BPF object built against 6.12's BTF loads through CO-RE, and the
# stall is seen and mitigated.
. "$WBG_TOP/tests/vm/lib.sh"
check "kernel is 6.18" test "$(uname -r | cut -d. -f1,2)" = 6.18
kernel_matrix
check "6.18: verify says the dying-wb fallback is missing (exit 1)" \
	sh -c "[ $VERIFY_RC = 1 ] && [ \"\$(jq -r .dying_wb_fallback.state /wbg-out/verify.json)\" = missing ]"
check "6.18: the unguarded replacement's foreign flushes get -ENOENT ($KM_ENOENT_OFF)" test "$KM_ENOENT_OFF" -gt 0
check "6.18: with wbguardd, -ENOENT under a quarter of the unguarded run's ($KM_ENOENT_ON of $KM_ENOENT_OFF)" \
	awk -v e="$KM_ENOENT_ON" -v u="$KM_ENOENT_OFF" 'BEGIN { exit !(u > 0 && e * 4 < u) }'
