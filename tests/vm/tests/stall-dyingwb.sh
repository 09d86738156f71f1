# vm: --kernel dyingwb --disks ext4
# With seed 000's fallback the same foreign flushes reach the dying wb.
. "$WBG_TOP/tests/vm/lib.sh"
check "kernel has wb_get_lookup_dying" grep -q ' wb_get_lookup_dying$' /proc/kallsyms
$WBG_BUILD/tests/wbstall --files 50 --old-secs 3 --new-secs 12 --dir /mnt/ext4 --mode removed --json /wbg-out/r.json
check "wbstall on ext4, removed" test $? = 0
check "no -ENOENT for the removed cgroup" test -z "$(jqv /wbg-out/r.json '.cgroup_writeback_by_id.old_target.enoent')"
check "flushes to the dying cgroup succeed" test "$(jq '[.cgroup_writeback_by_id.series[] | select(.ret == 0 and .target == "dying") | .count] | add // 0' /wbg-out/r.json)" -gt 0
