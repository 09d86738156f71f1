# vm: --kernel deb61 --disks ext4
# Debian's stock 6.1: the BPF object built against 6.12's BTF loads (CO-RE)
# and sees the stall.
. "$WBG_TOP/tests/vm/lib.sh"
check "kernel is 6.1" test "$(uname -r | cut -d. -f1,2)" = 6.1
printf '[mitigation]\nmode = off\n' >/tmp/off.conf
daemon_start "$WBG_BUILD" --config /tmp/off.conf
check "wbguardd starts on 6.1 (mitigation off)" test $? = 0
$WBG_BUILD/tests/wbstall --files 50 --old-secs 3 --new-secs 12 --dir /mnt/ext4 --mode removed --json /wbg-out/r.json
check "wbstall (BPF attached, CO-RE) on 6.1" test $? = 0
check "-ENOENT for the removed cgroup on 6.1" test "$(jqv /wbg-out/r.json '.cgroup_writeback_by_id.old_target.enoent')" -gt 0
scrape_metrics
check "verdict: dying-wb fallback missing on 6.1" test "$(verdict dying_wb_fallback)" = missing
check "verdict: bdev foreign flush missing on 6.1" test "$(verdict bdev_foreign_flush)" = missing
daemon_stop
