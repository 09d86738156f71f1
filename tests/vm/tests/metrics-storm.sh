# vm: --kernel deb61 --disks ext4
# The probes under a local user's reconnect storm, on Debian 12's own kernel
# (issue 49): uid 65534 reconnects to the metrics port from 16 loopback
# addresses, 4 each, as fast as it is shut out. The listening socket's
# queue is first come, first served, so a probe waits behind what the user
# keeps queued, and the server shuts the user's connections as fast as it
# learns their owner: with inet_diag (Debian's kernels; the guest loads
# tcp_diag as a node's `ss` would) one netlink request each, 369 a second
# in a TCG guest and 100 of 100 probes within 1 s. Without it (the stock
# test kernel, tenants.sh) each lookup reads all of /proc/net/tcp, which
# the storm fills with thousands of TIME_WAIT lines: 43 a second, and 6 of
# 40 probes within 1 s, the check's failure without inet_diag.
. "$WBG_TOP/tests/vm/lib.sh"
check "inet_diag is loaded (tcp_diag)" test -d /sys/module/tcp_diag
daemon_start "$WBG_BUILD"
check "wbguardd starts with the default configuration" test $? = 0
L="python3 $WBG_TOP/tests/bench/tenant-load.py"
scrape_metrics
shut0=$(metric wbguard_http_user_share_closes_total) t0=$(date +%s.%N)
TENANT_UID=65534 $L reconnect 16 4 >/tmp/reconnect.json &
stormer=$!
sleep 2
$L probe 9573 /livez,/readyz /tmp/probes.txt 100 1 0.05 >/dev/null
queued=$(ss -ltnH 'sport = :9573' | awk '{print $2}')
scrape_metrics
shut1=$(metric wbguard_http_user_share_closes_total) t1=$(date +%s.%N)
kill $stormer 2>/dev/null
wait $stormer 2>/dev/null
read -r ok worst median <<EOF
$(sed 's/^fail$/1000000/' /tmp/probes.txt | sort -n | awk '{v[NR] = $1; ok += $1 < 1000000}
	END {printf "%d %.2f %.3f\n", ok, v[NR] / 1e6, v[int((NR + 1) / 2)] / 1e6}')
EOF
rate=$(awk -v a="${shut0:-0}" -v b="${shut1:-0}" -v s="$t0" -v e="$t1" 'BEGIN {printf "%.0f", (b - a) / (e - s)}')
echo "# uid 65534 reconnecting ($(cat /tmp/reconnect.json)): shut $rate a second, $queued queued at the end; probes: $ok of 100 within 1 s (median $median s, worst $worst s)"
check "the user's connections are shut as they come (share closes counted: $rate a second)" test "$rate" -gt 0
check "probes under the reconnect storm: within 1 s, 99 of 100 or more ($ok, worst $worst s)" \
	test "${ok:-0}" -ge 99
check "no warning of a missing inet_diag" sh -c "! grep -q 'no inet_diag' /wbg-out/wbguardd.log"
daemon_stop
check "wbguardd stops cleanly" test "$DAEMON_RC" = 0
