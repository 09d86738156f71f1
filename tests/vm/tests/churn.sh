# vm: --kernel stock --disks ext4
# Churn at small scale (the benchmark tests/bench/churn-bench runs issue 7's
# full goal): 200 cgroups tracked while 120 are created, dirtied and removed
# at 20 a second. Every removal is accounted for: a record each, none
# missing; the counters agree with the records. In each flush mode: eager
# (each one flushed or clean) and the default, on-evidence (nobody touches
# their files again, so each drains by itself: no flush at all, the
# cleanup cycles batched).
. "$WBG_TOP/tests/vm/lib.sh"
B=$WBG_BUILD
mkdir -p /mnt/ext4/churn
for mode in eager on-evidence; do
	export WBG_FLUSH_MODE=$mode
	daemon_start $B
	check "$mode: wbguardd starts" test $? = 0
	$B/tests/cgchurn --parent hold --label h --hold 200 --seconds 0 >/wbg-out/hold.json &
	hp=$!
	while [ ! -s /wbg-out/hold.json ]; do sleep 0.2; done
	$B/tests/cgchurn --parent load --label l --rate 20 --seconds 6 --dir /mnt/ext4/churn >/wbg-out/load.json
	n=$(jq '.exits | length' /wbg-out/load.json)
	# on-evidence, a record is written once the kernel has drained the
	# dying wb (about one expiry, 30 s) and the cleanup has run
	i=0; while [ "$(grep -c '"cgroup":"load/l' /run/wbguard/handovers.jsonl)" -lt "$n" ] && [ $i -lt 90 ]; do sleep 1; i=$((i + 1)); done
	echo "# $mode: $n removals at $(jq '(.exits | length) / .elapsed_s | . * 10 | round / 10' /wbg-out/load.json)/s; records after ${i} s more: $(grep -c '"cgroup":"load/l' /run/wbguard/handovers.jsonl)"
	check "$mode: cgchurn made its removals without errors" test "$(jq .errors /wbg-out/load.json)" = 0 -a "$n" -ge 100
	missing=0
	for c in $(jq -r '.exits[].cgroup' /wbg-out/load.json); do
		grep -q "\"cgroup\":\"$c\"" /run/wbguard/handovers.jsonl || missing=$((missing + 1))
	done
	check "$mode: every removal has its record (missing: $missing)" test $missing = 0
	outcomes=$(grep '"cgroup":"load/l' /run/wbguard/handovers.jsonl | jq -r .outcome | sort | uniq -c | tr -s ' \n' ' ')
	echo "# $mode: outcomes: $outcomes"
	scrape_metrics
	if [ $mode = eager ]; then
		check "$mode: each one flushed or clean" test -z "$(grep '"cgroup":"load/l' /run/wbguard/handovers.jsonl | jq -r 'select(.outcome != "flushed" and .outcome != "clean") | .outcome')"
	else
		check "$mode: each one drained or clean, none flushed" test -z "$(grep '"cgroup":"load/l' /run/wbguard/handovers.jsonl | jq -r 'select(.outcome != "drained" and .outcome != "clean") | .outcome')"
		check "$mode: no flush job at all" test "$(metric wbguard_flush_jobs_total)" = 0
		check "$mode: the drained ones' dying wbs verified clean, cleanup re-run" \
			test -z "$(grep '"cgroup":"load/l' /run/wbguard/handovers.jsonl | jq -r 'select(.outcome == "drained" and (.dying_wb_clean != true or .cleanup_rerun != true)) | .cgroup')"
		cycles=$(metric wbguard_cleanup_cycles_total)
		echo "# $mode: $cycles cleanup cycles for $n removals"
		check "$mode: cleanup cycles batched (fewer than the removals)" test "${cycles:-0}" -ge 1 -a "${cycles:-0}" -lt "$n"
		check "$mode: nothing watched any more" test "$(metric wbguard_dying_watched)" = 0
	fi
	# every removal was seen live: the stall path never fires
	check "$mode: no stall handover, no stall reported ($(metric 'wbguard_stall_reports_total{result="started"}'))" \
		sh -c "[ '$(metric 'wbguard_stall_reports_total{result="started"}')' = 0 ] && [ '$(metric wbguard_kernel_stall_reports_total)' = 0 ]"
	total=$(grep '^wbguard_handovers_total{' /wbg-out/metrics.txt | awk '{s += $2} END {print s}')
	check "$mode: the handover counters agree with the records ($total)" test "$total" = "$(grep -c '' /run/wbguard/handovers.jsonl)"
	check "$mode: the 200 held cgroups are tracked meanwhile" \
		test "$($B/daemon/wbguardctl list --json | jq '[.[] | select(.cgroup | startswith("hold/"))] | length')" = 200
	kill -TERM $hp; wait $hp
	check "$mode: still alive" kill -0 $DAEMON
	daemon_stop
	rm -rf /mnt/ext4/churn/*
done
