# vm: --kernel bdevfrnwq --disks ext4
# vm-paced: it waits 11 s for the verdict's refresh (0.4 of its vCPUs busy)
# (Whether b goes over its dirty limit is timing, below, paced or not: in
# the night's six full runs its guest made no foreign bdev flush in 3
# rounds once beside the stall test, of two, and once alone, of four.)
# Both fallback patches with seed 001's workqueue allocated (patch 0003,
# ../shared/kernels): foreign bdev dirtying takes seed 001's own path,
# the kernel calls bdev_flush_by_dev from its workqueue, and the verdict is
# active from what the kernel did.
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/bdev-foreign.sh"
# wbguardd watches with its flushes off: the handover of cgroup a (whose
# dd exits as b starts) would otherwise write the loop device's page cache,
# b's pages with it, racing b to its dirty limit (in one CI run all three
# rounds below saw no foreign flush). The verdicts do not depend on it.
printf '[mitigation]\nmode = off\n' >/tmp/off.conf
daemon_start "$WBG_BUILD" --config /tmp/off.conf
check "wbguardd starts" test $? = 0
# Whether cgroup b goes over its dirty limit (and the kernel makes foreign
# flushes) depends on timing under TCG: measured 0 in some runs and 31-37 in
# others with the same build, so the scenario runs up to three times.
for round in 1 2 3; do
	bdev_foreign_dirty
	check "foreign bdev dirtying set up (round $round)" test $? = 0
	sleep 11
	scrape_metrics
	echo "# round $round: bdev flush requests so far: $(metric 'wbguard_kernel_foreign_flush_requests_total{kind="bdev"}')"
	[ "$(metric 'wbguard_kernel_foreign_flush_requests_total{kind="bdev"}')" -gt 0 ] 2>/dev/null && break
done
own=$(metric 'wbguard_kernel_foreign_dirty_total{folio="bdev",path="bdev"}')
echo "# foreign bdev dirtying on seed 001's path: ${own:-0}; bdev flush requests $(metric 'wbguard_kernel_foreign_flush_requests_total{kind="bdev"}'), bdev flushes $(metric wbguard_kernel_bdev_flushes_total), work items $(metric wbguard_kernel_bdev_flush_work_total)"
check "foreign bdev dirtying on seed 001's own path" test "${own:-0}" -gt 0
check "none on the owner-wb path" test "$(metric 'wbguard_kernel_foreign_dirty_total{folio="bdev",path="owner_wb"}')" = 0
check "the programs that count bdev flushes are attached" test "$(grep -c 'wbguard_bpf_program_attached{program="\(path_fforeign_dev\|path_bdev_flush\|path_frn_enter\)",reason=""} 1' /wbg-out/metrics.txt)" = 3
check "verdict: bdev foreign flush active" test "$(verdict bdev_foreign_flush)" = active
if [ "$(metric 'wbguard_kernel_foreign_flush_requests_total{kind="bdev"}')" -gt 0 ] 2>/dev/null; then
	check "bdev_flush_by_dev called" test "$(metric wbguard_kernel_bdev_flushes_total)" -gt 0
	check "memcg_bdev_frn_flusher work counted" test "$(metric wbguard_kernel_bdev_flush_work_total)" -gt 0
	check "evidence: bdev flushes seen" test "$(metric wbguard_kernel_bdev_flushes_total)" -gt 0
else
	# The kernel made no foreign bdev flush in any round: a matter of
	# timing under TCG (3 of 7 guests this session, with wbguardd's
	# flushes on or off, b's memory.max 32M or 16M; once a guest makes
	# none, its later rounds make none either). What follows from a flush
	# cannot be checked then; the verdict and the own-path dirtying are.
	for c in "bdev_flush_by_dev called" "memcg_bdev_frn_flusher work counted" "evidence: bdev flushes seen"; do
		skip "$c (the kernel made no foreign bdev flush in 3 rounds in this guest)"
	done
fi
promtool check metrics </wbg-out/metrics.txt >/wbg-out/promtool.txt 2>&1
check "promtool accepts the scrape" test $? = 0
daemon_stop
"$WBG_BUILD/daemon/wbguardctl" verify --json --dir /mnt/ext4 >/wbg-out/verify.json
check "verify exits 0" test $? = 0
check "verify: bdev active from the probe" \
	test "$(jq -r '[.bdev_foreign_flush.state, (.bdev_foreign_flush.evidence.bdev_dirty_own_path > 0)] | join(",")' /wbg-out/verify.json)" = active,true
