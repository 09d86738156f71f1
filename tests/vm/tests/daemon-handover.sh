# vm: --kernel stock --disks ext4,xfs
# wbguardd on the stock 6.12 kernel: a cgroup dirties files on ext4 and exits;
# wbguardd flushes at populated 1 -> 0 (before rmdir), only the filesystem
# that cgroup wrote, re-runs the kernel's offline-wb cleanup after rmdir, and
# wb_stats then shows no dirty dying wb. A second cgroup removed at once
# (flush still running at rmdir) is handled the same way.
. "$WBG_TOP/tests/vm/lib.sh"
# The handover's eager lifecycle (flush before rmdir, cleanup, check): [flush]
# mode = eager. evidence.sh runs the default, on-evidence.
export WBG_FLUSH_MODE=eager
printf '[metrics]\ntextfile = /run/wbguard/wbguard.prom\n' >/tmp/textfile.conf
daemon_start "$WBG_BUILD" --config /tmp/textfile.conf
check "wbguardd starts and watches the tree" test $? = 0
grep -q 'BPF on' /wbg-out/wbguardd.log
check "BPF programs loaded" test $? = 0
cg=/sys/fs/cgroup/t
mkdir $cg && echo +memory >$cg/cgroup.subtree_control && mkdir $cg/a $cg/b
# The writer's tax: the inode sets come from an inode's clean -> dirty
# transition, not from each folio; the per-folio program (per-pod expiry
# only) is not attached while no pod has a per-pod expiry. 32 MiB to one
# file is 8,192 folios: the kernel's own BPF statistics count the calls.
echo 1 >/proc/sys/kernel/bpf_stats_enabled
mkdir $cg/w
sh -c "echo \$\$ > $cg/w/cgroup.procs; exec dd if=/dev/zero of=/mnt/ext4/w bs=64k count=512 status=none"
rmdir $cg/w
bpftool prog show --json >/wbg-out/progs.json
echo 0 >/proc/sys/kernel/bpf_stats_enabled
runs() { jq "[.[] | select(.name == \"$1\") | .run_cnt // 0] | add // 0" /wbg-out/progs.json; }
echo "# 8,192 folios dirtied: dirty_inode ran $(runs dirty_inode) times, dirty_switch $(runs dirty_switch), expiry_folio $(runs expiry_folio)"
check "8,192 folios of one file: the inode program ran a few times (not per folio)" \
	sh -c "[ $(runs dirty_inode) -ge 1 ] && [ $(runs dirty_inode) -le 16 ]"
check "no per-folio program ran while no pod has a per-pod expiry" test "$(runs expiry_folio)" = 0
scrape_metrics
check "the per-folio expiry program: idle (not attached) without a per-pod expiry" \
	test "$(metric 'wbguard_bpf_program_attached{program="expiry_folio",reason="idle"}')" = 0
rm -f /mnt/ext4/w
# a: writes 24 MiB to 8 files and exits; removed 1 s later.
sh -c "echo \$\$ > $cg/a/cgroup.procs; for i in 1 2 3 4 5 6 7 8; do dd if=/dev/zero of=/mnt/ext4/a\$i bs=1M count=3 status=none; done"
grep file_dirty $cg/a/memory.stat | sed 's/^/# a: /'
sleep 1
rmdir $cg/a
# b: same, removed right away (the flush is still running at rmdir).
sh -c "echo \$\$ > $cg/b/cgroup.procs; for i in 1 2 3 4 5 6 7 8; do dd if=/dev/zero of=/mnt/ext4/b\$i bs=1M count=3 status=none; done"
rmdir $cg/b
sleep 3
# The metrics endpoint, scraped for real and checked by promtool.
curl -sf http://127.0.0.1:9573/metrics >/wbg-out/metrics.txt
check "metrics endpoint answers" test $? = 0
promtool check metrics </wbg-out/metrics.txt >/wbg-out/promtool.txt 2>&1
check "promtool check metrics passes" test $? = 0
sed 's/^/# promtool: /' /wbg-out/promtool.txt
check "handovers counted by trigger and outcome" \
	test "$(metric 'wbguard_handovers_total{trigger="populated-0",outcome="flushed"}')" -ge 2
check "reaction histogram has both handovers" test "$(metric wbguard_handover_reaction_seconds_count)" -ge 2
check "cleanup cycles counted" test "$(metric wbguard_cleanup_cycles_total)" -ge 2
check "BPF groups reported loaded" test "$(metric 'wbguard_bpf_programs_loaded{group="dirtied"}')" = 1
check "kernel foreign flush series exported" grep -q '^wbguard_kernel_foreign_flushes_total{result="enoent",target="dying"}' /wbg-out/metrics.txt
check "unknown path is 404" test "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9573/nope)" = 404
daemon_stop
check "wbguardd exits 0 on SIGTERM" test "$DAEMON_RC" = 0
promtool check metrics </run/wbguard/wbguard.prom >/dev/null 2>&1
check "textfile written at exit, and promtool accepts it" test $? = 0
check "textfile has the final counts" grep -q '^wbguard_cleanup_cycles_total [1-9]' /run/wbguard/wbguard.prom
check "no temporary textfile left" test ! -e /run/wbguard/wbguard.prom.tmp
R=/wbg-out/handovers.jsonl
sed 's/^/# /' $R
ha=$(grep '"cgroup":"t/a"' $R)
hb=$(grep '"cgroup":"t/b"' $R)
field() { echo "$1" | jq -r ".$2 // empty"; }
check "a: handover recorded" test -n "$ha"
check "a: triggered by populated 1 -> 0" test "$(field "$ha" trigger)" = populated-0
check "a: outcome flushed" test "$(field "$ha" outcome)" = flushed
check "a: dirty bytes seen at the trigger" test "$(field "$ha" dirty_bytes)" -gt 0
check "a: planned from BPF" test "$(field "$ha" plan)" = bpf
check "a: one filesystem target (ext4 only, xfs untouched)" test "$(($(field "$ha" fs_targets) + $(field "$ha" inode_targets)))" = 1
check "a: flushed before rmdir" test "$(field "$ha" flushed_before_rmdir)" = true
check "a: offline-wb cleanup re-run" test "$(field "$ha" cleanup_rerun)" = true
check "a: wb_stats shows no dirty dying wb" test "$(field "$ha" dying_wb_clean)" = true
check "b: outcome flushed" test "$(field "$hb" outcome)" = flushed
check "b: offline-wb cleanup re-run" test "$(field "$hb" cleanup_rerun)" = true
check "b: wb_stats shows no dirty dying wb" test "$(field "$hb" dying_wb_clean)" = true
check "no scratch cgroup left behind" test ! -e /sys/fs/cgroup/wbguard.scratch
rmdir $cg

# Without BPF: the filesystems the cgroup's processes could see, read while
# they were alive. This one lives in a mount namespace without the xfs.
daemon_start "$WBG_BUILD" --no-bpf
check "wbguardd starts without BPF" test $? = 0
mkdir $cg && echo +memory >$cg/cgroup.subtree_control && mkdir $cg/c
unshare -m sh -c "umount /mnt/xfs; echo \$\$ > $cg/c/cgroup.procs; sleep 0.5; for i in 1 2 3 4; do dd if=/dev/zero of=/mnt/ext4/c\$i bs=1M count=3 status=none; done"
sleep 1
rmdir $cg/c
sleep 2
daemon_stop
hc=$(grep '"cgroup":"t/c"' /wbg-out/handovers.jsonl)
echo "# $hc"
check "no BPF: planned from the processes' mount namespace" test "$(field "$hc" plan)" = mountns
check "no BPF: only the ext4 they could see" test "$(echo "$hc" | jq -r '[.target_list[].fstype] | join(",")')" = ext4
check "no BPF: flushed" test "$(field "$hc" outcome)" = flushed
rmdir $cg
