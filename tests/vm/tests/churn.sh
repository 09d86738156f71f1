# vm: --kernel stock --disks ext4
# Churn at small scale (the benchmark tests/bench/churn-bench runs issue 7's
# full goal): 200 cgroups tracked while 120 are created, dirtied and removed
# at 20 a second. Every removal is accounted for: a record each, flushed or
# clean, none missing; the counters agree with the records.
. "$WBG_TOP/tests/vm/lib.sh"
B=$WBG_BUILD
mkdir -p /mnt/ext4/churn
daemon_start $B
check "wbguardd starts" test $? = 0
$B/tests/cgchurn --parent hold --label h --hold 200 --seconds 0 >/wbg-out/hold.json &
hp=$!
while [ ! -s /wbg-out/hold.json ]; do sleep 0.2; done
$B/tests/cgchurn --parent load --label l --rate 20 --seconds 6 --dir /mnt/ext4/churn >/wbg-out/load.json
n=$(jq '.exits | length' /wbg-out/load.json)
i=0; while [ "$(grep -c '"cgroup":"load/l' /run/wbguard/handovers.jsonl)" -lt "$n" ] && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
echo "# $n removals at $(jq '(.exits | length) / .elapsed_s | . * 10 | round / 10' /wbg-out/load.json)/s; records after ${i} s more: $(grep -c '"cgroup":"load/l' /run/wbguard/handovers.jsonl)"
check "cgchurn made its removals without errors" test "$(jq .errors /wbg-out/load.json)" = 0 -a "$n" -ge 100
missing=0
for c in $(jq -r '.exits[].cgroup' /wbg-out/load.json); do
	grep -q "\"cgroup\":\"$c\"" /run/wbguard/handovers.jsonl || missing=$((missing + 1))
done
check "every removal has its record (missing: $missing)" test $missing = 0
outcomes=$(grep '"cgroup":"load/l' /run/wbguard/handovers.jsonl | jq -r .outcome | sort | uniq -c | tr -s ' \n' ' ')
echo "# outcomes: $outcomes"
check "each one flushed or clean" test -z "$(grep '"cgroup":"load/l' /run/wbguard/handovers.jsonl | jq -r 'select(.outcome != "flushed" and .outcome != "clean") | .outcome')"
scrape_metrics
total=$(grep '^wbguard_handovers_total{' /wbg-out/metrics.txt | awk '{s += $2} END {print s}')
check "the handover counters agree with the records ($total)" test "$total" = "$(grep -c '' /run/wbguard/handovers.jsonl)"
check "the 200 held cgroups are tracked meanwhile" \
	test "$($B/daemon/wbguardctl list --json | jq '[.[] | select(.cgroup | startswith("hold/"))] | length')" = 200
kill -TERM $hp; wait $hp
check "still alive" kill -0 $DAEMON
daemon_stop
