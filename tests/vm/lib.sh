# Sourced by VM test jobs: TAP-like result lines the host runner counts.
# shellcheck shell=sh
# Each result line also goes, with the seconds since the test began, to
# /wbg-out/timeline: where a test's time goes (tests/vm/timing-table --steps).
WBG_T0=${WBG_T0:-$(cut -d' ' -f1 /proc/uptime)}
timeline() { echo "$(awk -v t0="$WBG_T0" '{printf "%.1f", $1 - t0}' /proc/uptime) $*" >>/wbg-out/timeline; }
ok() { echo "ok - $*"; timeline "ok - $*"; }
not_ok() { echo "not ok - $*"; timeline "not ok - $*"; }
skip() { echo "skip - $*"; timeline "skip - $*"; }
# check NAME CMD...: ok when CMD succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
# jqv FILE EXPR: print a jq value, empty on any error.
jqv() { jq -r "$2 // empty" "$1" 2>/dev/null; }
# Starts the independent bpftrace witness of cgroup_writeback_by_id results
# and waits until its probe is attached; witness_stop prints "RET COUNT" lines.
witness_start() {
	local i
	bpftrace -e 'kretprobe:cgroup_writeback_by_id { @ret[(int32)retval] = count(); }' >/tmp/witness.txt 2>&1 &
	WITNESS=$!
	i=0
	while ! grep -q Attaching /tmp/witness.txt && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 1
}
witness_stop() {
	local i=0
	kill -INT "$WITNESS"
	# bpftrace prints its maps and detaches; one that has not in 60 s is
	# said and left (its counts are then missing, and the checks on them fail)
	while kill -0 "$WITNESS" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$WITNESS" 2>/dev/null; then
		echo "# witness: bpftrace still running 60 s after SIGINT: $(cat /proc/$WITNESS/wchan 2>/dev/null)" >&2
		kill -KILL "$WITNESS" 2>/dev/null
	else
		wait "$WITNESS"
	fi
	sed -n 's/^@ret\[\(-\{0,1\}[0-9]*\)\]: \([0-9]*\)$/\1 \2/p' /tmp/witness.txt
}

# daemon_start BUILD [ARGS...]: starts wbguardd in the background, logging
# to $WBG_DAEMON_LOG (default /wbg-out/wbguardd.log), and waits until it
# watches the tree. A benchmark logs to the guest's tmpfs: on the 9p share
# each line is a round trip to the host.
# WBG_FLUSH_MODE=eager (or on-evidence): that [flush] mode, appended to the
# --config given (or as the only configuration); unset, the default.
daemon_start() {
	local b=$1 i log=${WBG_DAEMON_LOG:-/wbg-out/wbguardd.log} a n conf="" next=""
	shift
	rm -f /run/wbguard/handovers.jsonl
	if [ -n "${WBG_FLUSH_MODE:-}" ]; then
		# the arguments but --config, rotated back into place (sh has no arrays)
		n=$#
		while [ $n -gt 0 ]; do
			a=$1; shift; n=$((n - 1))
			if [ -n "$next" ]; then conf=$a; next=""; continue; fi
			case $a in
			--config) next=1 ;;
			--config=*) conf=${a#--config=} ;;
			*) set -- "$@" "$a" ;;
			esac
		done
		{ [ -n "$conf" ] && cat "$conf"; printf '\n[flush]\nmode = %s\n' "$WBG_FLUSH_MODE"; } >/tmp/wbg-mode.conf
		set -- "$@" --config /tmp/wbg-mode.conf
	fi
	# WBG_DAEMON_WRAP: a command it runs under (setpriv with the
	# DaemonSet's capability set, in expiry-bench)
	${WBG_DAEMON_WRAP:-} "$b/daemon/wbguardd" --log-level=info "$@" >"$log" 2>&1 &
	DAEMON=$!
	i=0
	while ! grep -q '^info: Watching' "$log" && [ $i -lt 300 ]; do
		kill -0 $DAEMON 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	grep -q '^info: Watching' "$log"
}
# daemon_stop: SIGTERM, wait, keep the handover records (and a log kept
# elsewhere) in /wbg-out.
daemon_stop() {
	kill -TERM "$DAEMON" 2>/dev/null
	wait "$DAEMON"
	DAEMON_RC=$?
	cp /run/wbguard/handovers.jsonl /wbg-out/ 2>/dev/null
	[ -n "${WBG_DAEMON_LOG:-}" ] && cp "$WBG_DAEMON_LOG" /wbg-out/wbguardd.log 2>/dev/null
	return $DAEMON_RC
}

# metric NAME{LABELS}: its value in the last scrape_metrics.
scrape_metrics() { curl -sf http://127.0.0.1:9573/metrics >/wbg-out/metrics.txt; }
metric() { awk -v k="$1" '$1 == k {print $2}' /wbg-out/metrics.txt; }
verdict() { grep "^wbguard_kernel_$1{state=" /wbg-out/metrics.txt | awk '$2 == 1' | sed 's/.*state="\([a-z]*\)".*/\1/'; }
# fgt A B: A > B as numbers (decimals allowed); empty counts as 0.
fgt() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { exit !(a + 0 > b + 0) }'; }

# await_record PATTERN [TENTHS]: until a line of the handovers file matches
# PATTERN (grep's), at most TENTHS tenths of a second (100); WAITED says how
# many it took.
await_record() {
	WAITED=0
	while ! grep -q "$1" /run/wbguard/handovers.jsonl 2>/dev/null && [ $WAITED -lt "${2:-100}" ]; do
		sleep 0.1
		WAITED=$((WAITED + 1))
	done
}

# bpf_programs: /wbg-out/programs.txt from the last scrape, one line per
# BPF program (name, attached 0/1, the reason when not), and both lists
# printed.
bpf_programs() {
	grep '^wbguard_bpf_program_attached{' /wbg-out/metrics.txt |
		sed 's/.*program="\([^"]*\)",reason="\([^"]*\)"} \(.*\)/\1 \3 \2/' >/wbg-out/programs.txt
	echo "# attached: $(awk '$2 == 1 {print $1}' /wbg-out/programs.txt | paste -sd' ')"
	echo "# not attached: $(awk '$2 != 1 {print $1 " (" $3 ")"}' /wbg-out/programs.txt | paste -sd' ')"
}

# The removals wbguardd was not there for, each against the unguarded run
# (STALLED_JSON, wbstall's result with wbguardd off), by a count rather
# than a time: the replacement's failed foreign flushes to the old cgroup
# (-ENOENT) under a quarter of the unguarded run's (the goal, 2%, and the
# worst lag and append time against the control are printed for
# tests/README: timing is the benchmarks'). Each first
# checks that the old cgroup left data dirty at its removal: without that
# there is no stall to prevent, and the check says so (skip) instead of
# passing. The kernel's periodic flusher is off meanwhile.
# The scenario, the same for the unguarded run and every case judged
# against it (the stall tests run it unguarded first): the old cgroup
# writes 48 MiB in 3 s, under its 512 MiB parent's background threshold,
# so it is still dirty at the removal; the replacement's 192 MiB in 12 s
# go over it, and its foreign flushes to the dead wb fail. Measured on
# stock 6.12 (2026-12-02): 17,634-21,709 -ENOENT unguarded in five runs,
# the replacement then taking about 50 s. Smaller scales stall only
# sometimes: with 384 MiB and 6 s, 2,004, 3,274, 3,746 and 34 in four runs;
# with 512 MiB and 6 s, 5 and 7; with a 1 GiB parent (this scenario until
# then, judged against a 512 MiB run) 0-12, no stall at all, so that a
# case could not have failed (tests/README).
STALL_RUN="--files 50 --old-secs 3 --new-secs 12 --parent-max 512M --dir /mnt/ext4 --mode removed"

# stall_judge WHAT JSON STALLED_JSON
# STALL_MEASURE_ONLY=WHY: the figures printed, not checked (WHY says why).
stall_judge() {
	local what=$1 j=$2 stalled=$3 e u c=""
	e=$(jqv "$j" '.cgroup_writeback_by_id.old_target.enoent // 0')
	u=$(jqv "$stalled" '.cgroup_writeback_by_id.old_target.enoent // 0')
	[ -s /wbg-out/control.json ] &&
		c=" (control $(jqv /wbg-out/control.json .new.worst_lag_s) s, $(jqv /wbg-out/control.json .new.elapsed_s) s)"
	echo "# $what: old data dirty at removal $(jqv "$j" .old.file_dirty_at_removal) B; replacement worst lag $(jqv "$j" .new.worst_lag_s) s, append $(jqv "$j" .new.elapsed_s) s$c, -ENOENT $e (unguarded: $u)${STALL_MEASURE_ONLY:+ (measured, not judged: $STALL_MEASURE_ONLY)}"
	if [ -n "${STALL_MEASURE_ONLY:-}" ]; then
		return 0
	elif [ "$(jqv "$j" .old.file_dirty_at_removal)" -gt 0 ] 2>/dev/null; then
		check "$what: -ENOENT to the old cgroup under a quarter of the unguarded run's ($e of $u)" \
			awk -v e="${e:-0}" -v u="${u:-0}" 'BEGIN { exit !(u > 0 && e * 4 < u) }'
	else
		skip "$what: the kernel had written the old cgroup's data before its removal (no stall to prevent)"
	fi
}

# stall_control: the never-removed control of the cases below, in the same
# guest and conditions (the same reproduction with the old cgroup kept,
# periodic flusher off, no wbguardd): stall_judge prints each case's worst
# lag and append time next to its own. A figure, not a check (performance
# is for the benchmarks; tests/README has the table).
stall_control() {
	local wb
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	"$WBG_BUILD/tests/wbstall" $STALL_RUN --mode alive --json /wbg-out/control.json >/dev/null
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
	echo "# control (old cgroup kept): worst lag $(jqv /wbg-out/control.json .new.worst_lag_s) s, append $(jqv /wbg-out/control.json .new.elapsed_s) s"
}

# kill_while_watched STALLED_JSON [NO_WBSTATS]: on-evidence, wbguardd
# killed -9 while the removed cgroup is watched and started again before the
# replacement writes (--pause 10: a restart takes about 2 s under TCG, but
# took 7.7 s in the paced lane of a full run on 2026-12-07, after the
# replacement had begun: not this case, and a 99 s stall with wbguardd
# back, the early end of a watch that issue 48 names): the
# restart flushes what the watch's
# pending record named (recovered). NO_WBSTATS=1: debugfs unmounted for the
# restart, so that its scan of dying wbs finds nothing (as before 6.10) and
# only the record tells.
kill_while_watched() {
	local stalled=$1 no_wbstats=${2:-} ws i r wb w=""
	[ -n "$no_wbstats" ] && w=", no wb_stats"
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	WBG_FLUSH_MODE=on-evidence daemon_start "$WBG_BUILD"
	"$WBG_BUILD/tests/wbstall" $STALL_RUN --pause 10 --json /wbg-out/killed.json >/dev/null &
	ws=$!
	i=0
	until { scrape_metrics && [ "$(metric wbguard_dying_watched)" = 1 ]; } || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
	check "kill$w: the removed cgroup is watched" test "$(metric wbguard_dying_watched)" = 1
	check "kill$w: its pending record is in the state dir" sh -c 'ls /run/wbguard/pending-*.json >/dev/null 2>&1'
	kill -KILL $DAEMON
	wait $DAEMON 2>/dev/null
	[ -n "$no_wbstats" ] && umount /sys/kernel/debug
	WBG_FLUSH_MODE=on-evidence daemon_start "$WBG_BUILD"
	check "kill$w: restarted" test $? = 0
	wait $ws
	[ -n "$no_wbstats" ] && mount -t debugfs debugfs /sys/kernel/debug
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
	r=$(grep '"trigger":"recovered"' /run/wbguard/handovers.jsonl | grep '"cgroup":"wbstall/old"' | tail -1)
	echo "# recovered$w: $(echo "$r" | jq -c '{outcome, targets, cleanup_rerun}')"
	check "kill$w: the restart flushed what the watch's record named (recovered, flushed)" \
		test "$(echo "$r" | jq -r .outcome)" = flushed
	stall_judge "kill -9 while watched$w" /wbg-out/killed.json "$stalled"
	daemon_stop
}

# unseen_removals STALLED_JSON [NO_WBSTATS]: a removal wbguardd never saw,
# covered by the restart's scan of dying wbs or by the stall itself: wbguardd
# stopped while the old cgroup writes, started after its removal, before
# the replacement writes. NO_WBSTATS=1: debugfs unmounted, so that a
# restart's recovery cannot find the dying wb (as on kernels before 6.10)
# and only the stall tells.
unseen_removals() {
	local stalled=$1 no_wbstats=${2:-} ws i r wb
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	WBG_FLUSH_MODE=on-evidence daemon_start "$WBG_BUILD"
	"$WBG_BUILD/tests/wbstall" $STALL_RUN --pause 5 --json /wbg-out/unseen.json >/dev/null &
	ws=$!
	sleep 1
	daemon_stop
	i=0; while [ -d /sys/fs/cgroup/wbstall/old ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	check "unseen: the old cgroup was removed while wbguardd was down" test ! -d /sys/fs/cgroup/wbstall/old
	[ -n "$no_wbstats" ] && umount /sys/kernel/debug
	WBG_FLUSH_MODE=on-evidence daemon_start "$WBG_BUILD"
	# from its start, not from its first verdict refresh 10 s later: the
	# replacement stalls within seconds (on 6.1, 410 -ENOENT came first)
	check "unseen${no_wbstats:+, no wb_stats}: the stall is evidence as soon as wbguardd is up (status)" \
		test "$("$WBG_BUILD/daemon/wbguardctl" status --json | jq -r .daemon.stall_evidence)" = yes
	wait $ws
	[ -n "$no_wbstats" ] && mount -t debugfs debugfs /sys/kernel/debug
	# its record comes at the handover's end: without wb_stats, once the
	# watch has been quiet for 10 s
	await_record '"trigger":"\(stall\|recovered\)"' 200
	scrape_metrics
	r=$(jq -c 'select(.trigger == "stall" or .trigger == "recovered")' /run/wbguard/handovers.jsonl 2>/dev/null | tail -1)
	echo "# unseen${no_wbstats:+ (no wb_stats)}: $(echo "$r" | jq -c '{trigger, outcome, targets, evidence_flushes, cleanup_rerun}' 2>/dev/null); stall reports $(metric 'wbguard_stall_reports_total{result="started"}') started, $(metric wbguard_kernel_stall_repeats_total) repeats"
	if [ "$(jqv /wbg-out/unseen.json .old.file_dirty_at_removal)" -gt 0 ] 2>/dev/null; then
		if [ -n "$no_wbstats" ]; then
			check "unseen, no wb_stats: the stall itself started one handover (trigger stall), flushed" \
				sh -c "[ '$(metric 'wbguard_stall_reports_total{result="started"}')' = 1 ] && [ '$(echo "$r" | jq -r '"\(.trigger) \(.outcome)"' 2>/dev/null)' = 'stall flushed' ]"
		else
			# (jq 1.6's -e exits 0 on empty input: the record must exist)
			check "unseen: covered (the stall itself, or the restart's scan of dying wbs)" \
				sh -c "[ -n '$r' ] && echo '$r' | jq -e 'select(.outcome == \"flushed\")' >/dev/null"
		fi
	fi
	stall_judge "unseen${no_wbstats:+, no wb_stats}" /wbg-out/unseen.json "$stalled"
	daemon_stop
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
}

# past_watch_max STALLED_JSON: a removal wbguard refused to watch (a
# removal already watched fills a [flush] watch_max of one): flushed at
# once, as eager mode would.
past_watch_max() {
	local stalled=$1 r wb
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	printf '[flush]\nwatch_max = 1\n' >/tmp/max1.conf
	WBG_FLUSH_MODE=on-evidence daemon_start "$WBG_BUILD" --config /tmp/max1.conf
	mkdir /sys/fs/cgroup/filler
	sh -c 'echo $$ >/sys/fs/cgroup/filler/cgroup.procs; exec dd if=/dev/zero of=/mnt/ext4/filler bs=1M count=4 status=none'
	rmdir /sys/fs/cgroup/filler
	"$WBG_BUILD/tests/wbstall" $STALL_RUN --json /wbg-out/full.json >/dev/null
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
	scrape_metrics
	r=$(grep '"cgroup":"wbstall/old"' /run/wbguard/handovers.jsonl | tail -1)
	echo "# past watch_max: $(echo "$r" | jq -c '{trigger, outcome, first_flush_s, removed_s}')"
	check "past watch_max: refused (counted), flushed at its removal" \
		sh -c "[ '$(metric wbguard_dying_watch_full_total)' -ge 1 ] && [ '$(echo "$r" | jq -r .outcome)' = flushed ]"
	stall_judge "past watch_max" /wbg-out/full.json "$stalled"
	daemon_stop
	rm -f /mnt/ext4/filler
}

# kernel_matrix: what one kernel of the matrix (tests/README, "Kernels")
# shows, on its first test disk: wbguardctl verify's verdict (printed:
# the caller checks what its kernel must say), every BPF program attached
# or skipped for a named reason, and one stall smoke of lib.sh's scenario,
# unguarded and with wbguardd at its defaults. Sets VERIFY_RC, and
# KM_ENOENT_OFF / KM_ENOENT_ON (the replacement's -ENOENT to the removed
# cgroup in each run).
kernel_matrix() {
	local wb try r
	for try in 1 2; do
		"$WBG_BUILD/daemon/wbguardctl" verify --json --dir /mnt/ext4 >/wbg-out/verify.json
		VERIFY_RC=$?
		[ $VERIFY_RC = 2 ] && [ "$(jq -r .dying_wb_fallback.state /wbg-out/verify.json)" = unknown ] || break
		echo "# verify try $try: no foreign flush seen (unknown); again"
	done
	echo "# $(uname -r): verify exit $VERIFY_RC, $(jq -c '{dying_wb_fallback: .dying_wb_fallback.state, bdev_foreign_flush: .bdev_foreign_flush.state}' /wbg-out/verify.json 2>/dev/null)"
	printf '[mitigation]\nmode = off\n' >/tmp/off.conf
	daemon_start "$WBG_BUILD" --config /tmp/off.conf
	check "$(uname -r): wbguardd starts (mitigation off)" test $? = 0
	scrape_metrics
	bpf_programs
	check "$(uname -r): every BPF program attached, or not with a named reason" \
		sh -c "[ -s /wbg-out/programs.txt ] && awk '\$2 != 1 && \$3 == \"\" {exit 1}' /wbg-out/programs.txt"
	check "$(uname -r): the programs the stall evidence needs attached (wbid_exit, dirty_inode)" \
		sh -c "grep -q '^wbid_exit 1' /wbg-out/programs.txt && grep -q '^dirty_inode 1' /wbg-out/programs.txt"
	wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
	"$WBG_BUILD/tests/wbstall" $STALL_RUN --deadline 24 --json /wbg-out/stalled.json >/dev/null
	r=/wbg-out/stalled.json
	KM_ENOENT_OFF=$(jqv $r '.cgroup_writeback_by_id.old_target.enoent // 0')
	scrape_metrics
	echo "# $(uname -r) unguarded: old data dirty at removal $(jqv $r .old.file_dirty_at_removal) B, -ENOENT $KM_ENOENT_OFF, replacement worst lag $(jqv $r .new.worst_lag_s) s, append $(jqv $r .new.elapsed_s) s; pause $(metric 'wbguard_cgroup_dirty_throttle_pause_seconds_total{id="/wbstall/new",pod="",namespace="",container=""}') s"
	check "$(uname -r): BPF counts the replacement's foreign flushes to the removed cgroup" \
		test "$(jqv $r '.cgroup_writeback_by_id.old_target | ((.enoent // 0) + (.ok // 0) + (.other // 0))')" -gt 0
	daemon_stop
	daemon_start "$WBG_BUILD"
	check "$(uname -r): wbguardd starts (defaults)" test $? = 0
	"$WBG_BUILD/tests/wbstall" $STALL_RUN --json /wbg-out/guarded.json >/dev/null
	echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
	KM_ENOENT_ON=$(jqv /wbg-out/guarded.json '.cgroup_writeback_by_id.old_target.enoent // 0')
	r=$(grep '"cgroup":"wbstall/old"' /run/wbguard/handovers.jsonl | tail -1)
	echo "# $(uname -r) with wbguardd: -ENOENT $KM_ENOENT_ON, replacement worst lag $(jqv /wbg-out/guarded.json .new.worst_lag_s) s, append $(jqv /wbg-out/guarded.json .new.elapsed_s) s; $(echo "$r" | jq -c '{outcome, evidence, evidence_flushes}' 2>/dev/null)"
	daemon_stop
}
