# vm: --kernel stock --disks ext4
# The quick loop's smoke test (tests/run --quick), on each kernel in turn:
# wbguardd starts with its BPF programs, a container's dirty removal is
# handed over to its end in the default mode (on-evidence), the control API
# and the metrics answer, and a stop restores the sysctl. Seconds, not a
# reproduction: the full suite shows the stall and its absence.
. "$WBG_TOP/tests/vm/lib.sh"
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
daemon_start "$WBG_BUILD"
check "wbguardd starts on $(uname -r)" test $? = 0
check "its BPF programs load" grep -q 'BPF on' /wbg-out/wbguardd.log
cg=/sys/fs/cgroup/smoke
mkdir $cg && echo +memory >$cg/cgroup.subtree_control && mkdir $cg/c
sh -c "echo \$\$ >$cg/c/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/smoke bs=1M count=8 status=none"
rmdir $cg/c
# the replacement: appends to the same file
mkdir $cg/r
sh -c "echo \$\$ >$cg/r/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/smoke bs=1M count=4 oflag=append conv=notrunc status=none"
rmdir $cg/r
await_record '"cgroup":"smoke/c"' 900
rec=$(grep '"cgroup":"smoke/c"' /run/wbguard/handovers.jsonl | tail -1)
echo "# $(echo "$rec" | jq -c '{outcome, evidence, evidence_flushes, cleanup_rerun, dying_wb_clean}') after $((WAITED / 10)) s"
check "the removal's handover ended (flushed, drained or clean)" \
	sh -c "[ -n '$rec' ] && echo '$rec' | jq -e 'select(.outcome == \"flushed\" or .outcome == \"drained\" or .outcome == \"clean\")' >/dev/null"
check "the control API answers" sh -c "$WBG_BUILD/daemon/wbguardctl status --json | jq -e .daemon.version >/dev/null"
scrape_metrics
check "the metrics answer, with a kernel verdict" test -n "$(verdict dying_wb_fallback)"
daemon_stop
check "a stop exits cleanly with the admin's sysctl" sh -c "[ $DAEMON_RC = 0 ] && [ \"\$(cat $sysctl)\" = $admin ]"
rmdir $cg 2>/dev/null || true
