# vm: --kernel stock --disks ext4
# Cgroup names with spaces, newlines, bytes that are not UTF-8 and very long
# paths are tracked, flushed and recorded under their exact names, and
# escaped in logs and metrics. The inotify queue overflowing and the watch
# limit being hit: wbguardd rescans, retries, says so, and every removal is
# still accounted for.
# (bash: the names are an array)
[ -n "${BASH_VERSION:-}" ] || exec bash "$0"
. "$WBG_TOP/tests/vm/lib.sh"
# Every removal here is flushed at once, to check its record under its
# exact name: [flush] mode = eager.
export WBG_FLUSH_MODE=eager
B=$WBG_BUILD
cg=/sys/fs/cgroup/wbgtest
mkdir -p $cg && echo +memory >$cg/cgroup.subtree_control
daemon_start $B --log-level=debug
check "wbguardd starts" test $? = 0

# Odd names: each writes 2 MiB, exits, is removed.
long=$cg
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do long="$long/$(printf 'L%.0s' $(seq 1 250))$i"; done
names=("sp ace" "$(printf 'esc\033[31mred')" "$(printf 'bad\xff\xfebytes')" "quote\"and\\\\back" "${long#$cg/}")
mkdir "$cg/$(printf 'new\nline')" 2>/dev/null
check "a newline in a cgroup name: the kernel refuses it (nothing to handle)" test $? != 0
n=0
for name in "${names[@]}"; do
	n=$((n + 1))
	mkdir -p "$cg/$name"
	# a container runs a while: tracked before it writes and goes
	want=$(printf 'wbgtest/%s' "$name" | jq -Rs .)
	i=0; while ! $B/daemon/wbguardctl list --json | jq -e --argjson w "$want" 'any(.[]; .cgroup == $w)' >/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	sh -c 'echo $$ >"$1/cgroup.procs"; exec dd if=/dev/zero of=/mnt/ext4/odd-$2 bs=1M count=2 status=none' sh "$cg/$name" $n
	sleep 0.3
	rmdir "$cg/$name"
done
# the long one's ancestors (populated never; removal is still a handover)
d=${long%/*}
while [ "$d" != "$cg" ]; do rmdir "$d"; d=${d%/*}; done
want=$(printf '%s' "${long#/sys/fs/cgroup/}" | jq -Rs .)
# (its record comes once the removal's cleanup is done; it may carry the
# trigger populated-0, as a flush at populated 0 continues at the removal)
i=0; while ! jq -e --argjson w "$want" 'select(.cgroup == $w)' /run/wbguard/handovers.jsonl >/dev/null 2>&1 && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
echo "# long path: ${#long} bytes; its levels' records: $(grep '"cgroup":"wbgtest/L' /run/wbguard/handovers.jsonl | jq -r '"\(.cgroup | length):\(.trigger):\(.outcome)"' | tr '\n' ' ')"
for name in "${names[@]}"; do
	want=$(printf 'wbgtest/%s' "$name" | jq -Rs .)
	got=$(jq -c --argjson w "$want" 'select(.cgroup == $w) | .outcome' /run/wbguard/handovers.jsonl | head -1)
	check "recorded under its exact name and flushed: $(printf '%s' "$name" | head -c 30 | LC_ALL=C tr -c '[:alnum:] ' '?') (${#name} bytes)" test "$got" = '"flushed"'
done
check "control characters escaped in the log (no raw ESC)" \
	sh -c "grep -q 'wbgtest/esc\\\\x1b\[31mred' /wbg-out/wbguardd.log && ! grep -q \"\$(printf '\\033')\" /wbg-out/wbguardd.log"
check "non-UTF-8 bytes escaped in the log" grep -q 'bad\\xff\\xfebytes' /wbg-out/wbguardd.log
# D-Bus refuses strings that are not UTF-8: such a record, sent as it is,
# broke wbguardctl handovers (and list) for every record beside it
$B/daemon/wbguardctl handovers --json >/wbg-out/handovers-names.json 2>/wbg-out/handovers-names.err
check "wbguardctl handovers answers with a non-UTF-8 name among the records, escaped" \
	sh -c "[ $? = 0 ] && jq -e 'any(.[]; .cgroup == \"wbgtest/bad\\\\xff\\\\xfebytes\")' /wbg-out/handovers-names.json >/dev/null"
scrape_metrics
promtool check metrics </wbg-out/metrics.txt >/wbg-out/promtool.txt 2>&1
check "the metrics stay valid (promtool) with these names in their labels" test $? = 0
grep 'id="/wbgtest/\(new\|bad\|sp\)' /wbg-out/metrics.txt | head -3 | sed 's/^/# /'

# A burst of 300 cgroups against a 16-event queue, wbguardd stopped meanwhile.
daemon_stop
cp /wbg-out/wbguardd.log /wbg-out/wbguardd-names.log; cp /run/wbguard/handovers.jsonl /wbg-out/handovers-names.jsonl
echo 16 >/proc/sys/fs/inotify/max_queued_events
printf '[daemon]\nwatch_retry_sec = 3\n' >/tmp/retry.conf
daemon_start $B --config /tmp/retry.conf
kill -STOP $DAEMON
mkdir $(seq -f "$cg/burst%g" 1 300) # one process: the burst is over at once
kill -CONT $DAEMON
burst() { $B/daemon/wbguardctl list --json | jq '[.[] | select(.cgroup | startswith("wbgtest/burst"))] | length'; }
i=0; while [ "$(burst)" != 300 ] && [ $i -lt 30 ]; do sleep 0.2; i=$((i + 1)); done
scrape_metrics
echo "# overflows $(metric wbguard_inotify_overflows_total), rescans $(metric wbguard_rescans_total)"
check "the queue overflowed and wbguardd counted it" fgt "$(metric wbguard_inotify_overflows_total)" 0
check "and rescanned" fgt "$(metric wbguard_rescans_total)" 0
check "all 300 are tracked after the rescan" \
	test "$(burst)" = 300
check "the overflow is logged" grep -q 'inotify queue overflowed' /wbg-out/wbguardd.log
kill -STOP $DAEMON
rmdir $(seq -f "$cg/burst%g" 1 300)
kill -CONT $DAEMON
i=0; while [ "$(grep -c '"cgroup":"wbgtest/burst[0-9]*"' /run/wbguard/handovers.jsonl)" -lt 300 ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
got=$(grep -c '"cgroup":"wbgtest/burst[0-9]*"' /run/wbguard/handovers.jsonl)
echo "# removals recorded: $got of 300 after $((i / 5)) s; by trigger: $(grep '"cgroup":"wbgtest/burst' /run/wbguard/handovers.jsonl | jq -r .trigger | sort | uniq -c | tr -s ' \n' ' ')"
check "every one of the 300 removals made while it was stopped is recorded" test "$got" = 300
echo 16384 >/proc/sys/fs/inotify/max_queued_events

# The watch limit: room for a few more watches only.
cur=$(cat /proc/sys/fs/inotify/max_user_watches)
inuse=$(cat /proc/[0-9]*/fdinfo/* 2>/dev/null | grep -c '^inotify wd:')
echo "# watches in use: $inuse; limit set to $((inuse + 20))"
echo $((inuse + 20)) >/proc/sys/fs/inotify/max_user_watches
mkdir $(seq -f "$cg/lim%g" 1 40)
i=0; until { scrape_metrics && fgt "$(metric wbguard_inotify_watch_failures_total)" 0; } || [ $i -ge 25 ]; do sleep 0.2; i=$((i + 1)); done
echo "# watch failures: $(metric wbguard_inotify_watch_failures_total)"
check "the watch limit refused some, counted" fgt "$(metric wbguard_inotify_watch_failures_total)" 0
check "and logged" grep -qi 'watch' /wbg-out/wbguardd.log
echo "$cur" >/proc/sys/fs/inotify/max_user_watches
# the retry comes within watch_retry_sec (3 s here)
i=0; while [ "$($B/daemon/wbguardctl list --json | jq '[.[] | select(.cgroup | startswith("wbgtest/lim"))] | length')" != 40 ] && [ $i -lt 40 ]; do sleep 1; i=$((i + 1)); done
check "after the limit is raised, the retry tracks all 40 (${i} s)" test $i -lt 40
rmdir $(seq -f "$cg/lim%g" 1 40)
i=0; while [ "$(grep -c '"cgroup":"wbgtest/lim[0-9]*"' /run/wbguard/handovers.jsonl)" -lt 40 ] && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
check "and their removals are recorded" test "$(grep -c '"cgroup":"wbgtest/lim[0-9]*"' /run/wbguard/handovers.jsonl)" = 40
check "still alive" kill -0 $DAEMON
daemon_stop
