# vm: --kernel bdevfrn --disks ext4
# The kernel with both fallback patches: both verdicts active, from the
# symbols and the flush_foreign tracepoint's dev field.
. "$WBG_TOP/tests/vm/lib.sh"
daemon_start "$WBG_BUILD"
check "wbguardd starts" test $? = 0
scrape_metrics
check "verdict: dying-wb fallback active" test "$(verdict dying_wb_fallback)" = active
check "verdict: bdev foreign flush active" test "$(verdict bdev_foreign_flush)" = active
check "evidence: bdev symbol" test "$(metric 'wbguard_kernel_bdev_foreign_flush_evidence{kind="symbol"}')" = 1
check "evidence: flush_foreign has a dev field" \
	test "$(metric 'wbguard_kernel_bdev_foreign_flush_evidence{kind="tracepoint_dev_field"}')" = 1
check "mitigation off by itself" test "$(metric wbguard_mitigation_active)" = 0
daemon_stop
