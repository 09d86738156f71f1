# vm: --kernel bdevfrn --disks ext4
# vm-paced: it waits 11 s for the verdict's refresh (0.4 of its vCPUs busy)
# The kernel with both fallback patches as ../shared/kernels builds it. Its
# seed 001 code is there (symbol, tracepoint dev field), so the verdict starts
# active; but that 6.12 adaptation never allocates memcg_bdev_frn_wq, so the
# kernel takes the owner-wb path for foreign bdev dirtying all the same. Once
# that is seen the verdict turns missing ("dormant"), and verify agrees.
# (The bdevfrnwq kernel has the workqueue: see verdict-bdevfrnwq.sh.)
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/bdev-foreign.sh"
daemon_start "$WBG_BUILD"
check "wbguardd starts" test $? = 0
scrape_metrics
check "verdict: dying-wb fallback active" test "$(verdict dying_wb_fallback)" = active
check "verdict: bdev foreign flush active from the code alone" test "$(verdict bdev_foreign_flush)" = active
check "evidence: bdev symbol" test "$(metric wbguard_kernel_bdev_foreign_flush_symbol)" = 1
check "evidence: flush_foreign has a dev field (BTF)" \
	test "$(metric wbguard_kernel_bdev_foreign_flush_dev_field)" = 1
check "the dev-argument variant of track_foreign_dirty runs" \
	test "$(metric 'wbguard_bpf_program_attached{program="path_fdirty_dev",reason=""}')" = 1
check "mitigation off by itself" test "$(metric wbguard_mitigation_active)" = 0

bdev_foreign_dirty
check "foreign bdev dirtying set up" test $? = 0
sleep 11 # the verdict is refreshed at most every 10 s, on use
scrape_metrics
shared=$(metric 'wbguard_kernel_foreign_dirty_total{folio="bdev",path="owner_wb"}')
own=$(metric 'wbguard_kernel_foreign_dirty_total{folio="bdev",path="bdev"}')
echo "# foreign bdev dirtying: ${shared:-0} on the owner-wb path, ${own:-0} on seed 001's path; bdev flushes $(metric wbguard_kernel_bdev_flushes_total)"
check "foreign bdev dirtying seen on the owner-wb path" test "${shared:-0}" -gt 0
check "none on seed 001's own path (its workqueue is NULL)" test "${own:-1}" = 0
check "no bdev_flush_by_dev call" test "$(metric wbguard_kernel_bdev_flushes_total)" = 0
check "verdict: bdev foreign flush now missing" test "$(verdict bdev_foreign_flush)" = missing
check "the log says the code is dormant" grep -q 'missing (code present but dormant)' /wbg-out/wbguardd.log
daemon_stop

"$WBG_BUILD/daemon/wbguardctl" verify --json --dir /mnt/ext4 >/wbg-out/verify.json
check "verify exits 0 (dying-wb fallback active)" test $? = 0
check "verify: bdev missing, dormant" \
	test "$(jq -r '[.bdev_foreign_flush.state, .bdev_foreign_flush.evidence.dormant] | join(",")' /wbg-out/verify.json)" = missing,true
check "verify leaves no loop device behind" test -z "$(losetup -a)"
