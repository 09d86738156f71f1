# vm: --kernel dyingwb --disks ext4
# With seed 000's fallback the same foreign flushes reach the dying wb.
. "$WBG_TOP/tests/vm/lib.sh"
check "kernel has wb_get_lookup_dying" grep -q ' wb_get_lookup_dying$' /proc/kallsyms
$WBG_BUILD/tests/wbstall --files 50 --old-secs 3 --new-secs 12 --dir /mnt/ext4 --mode removed --json /wbg-out/r.json
check "wbstall on ext4, removed" test $? = 0
ok=$(jq '[.cgroup_writeback_by_id.series[] | select(.result == "ok" and .target == "dying") | .count] | add // 0' /wbg-out/r.json)
enoent=$(jqv /wbg-out/r.json '.cgroup_writeback_by_id.old_target.enoent')
echo "# to the dying cgroup: ok $ok, -ENOENT ${enoent:-0}"
check "flushes to the dying cgroup succeed" test "$ok" -gt 0
# wb_get_lookup_dying() only returns a dying wb that has dirty IO at that
# instant, so a lookup racing with its writeback can still miss (seen: 0 or 1
# of ~1,000); stock 6.12 misses every one.
check "-ENOENT for the dying cgroup is under 1% of its flushes" test $((${enoent:-0} * 100)) -lt "$ok"

# wbguardd sees the fallback and stands down (mitigation = auto).
daemon_start "$WBG_BUILD"
check "wbguardd starts on the patched kernel" test $? = 0
check "wbguardd turns its mitigation off by itself" grep -q 'Mitigation off (mode auto, dying-wb fallback active)' /wbg-out/wbguardd.log
scrape_metrics
check "verdict: dying-wb fallback active" test "$(verdict dying_wb_fallback)" = active
check "verdict: bdev foreign flush missing (only patch 1)" test "$(verdict bdev_foreign_flush)" = missing
check "mitigation gauge 0" test "$(metric wbguard_mitigation_active)" = 0
daemon_stop

"$WBG_BUILD/daemon/wbguardctl" verify --dir /mnt/ext4 >/wbg-out/verify.txt
check "verify exits 0 (active) on the patched kernel" test $? = 0
sed 's/^/# verify: /' /wbg-out/verify.txt
