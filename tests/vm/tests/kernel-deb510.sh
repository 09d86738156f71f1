# vm: --kernel deb510 --disks ext4
# Debian's 5.10 (bullseye), the oldest long-term kernel still on nodes.
# What works there and what does not (tests/README, "Kernels"): its
# verifier has no BPF compare-and-exchange (5.12), so the programs that
# claim a record with one (the stall's evidence, the dirtied sets, the
# per-pod expiry) are refused, named load_refused; the removal programs
# load. wbguardd then runs as without BPF: every removal is flushed at once
# (eager), and verify cannot judge the kernel (unknown, exit 5). The hook
# needs nothing of BPF.
. "$WBG_TOP/tests/vm/lib.sh"
check "kernel is 5.10" test "$(uname -r | cut -d. -f1,2)" = 5.10
"$WBG_BUILD/daemon/wbguardctl" verify --json --dir /mnt/ext4 >/wbg-out/verify.json
rc=$?
echo "# verify exit $rc: $(jq -c . /wbg-out/verify.json 2>/dev/null | cut -c1-300)"
check "5.10: verify cannot judge the kernel without its BPF probe (exit 5)" test $rc = 5
daemon_start "$WBG_BUILD"
check "5.10: wbguardd starts" test $? = 0
scrape_metrics
bpf_programs
check "5.10: the removal programs attached" \
	sh -c "grep -q '^life_rmdir 1' /wbg-out/programs.txt && grep -q '^life_release 1' /wbg-out/programs.txt"
check "5.10: the stall's evidence refused by the verifier, and said so (load_refused)" \
	grep -q '^wbid_exit 0 load_refused' /wbg-out/programs.txt
check "5.10: without it, the mode in effect is eager" grep -q 'Flush mode: eager' /wbg-out/wbguardd.log
cg=/sys/fs/cgroup/k510
mkdir $cg && echo +memory >$cg/cgroup.subtree_control && mkdir $cg/c
sh -c "echo \$\$ >$cg/c/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/k510 bs=1M count=16 status=none"
rmdir $cg/c
await_record '"cgroup":"k510/c"' 300
rec=$(grep '"cgroup":"k510/c"' /run/wbguard/handovers.jsonl | tail -1)
echo "# $(echo "$rec" | jq -c '{trigger, outcome, plan_source, targets, first_flush_s}')"
check "5.10: a dirty removal is flushed (the mitigation works without BPF)" \
	test "$(echo "$rec" | jq -r .outcome)" = flushed
daemon_stop
rmdir $cg 2>/dev/null
