# vm: --kernel stock --disks ext4
# Per-pod dirty expiry with real containers (crun and runc), the global
# mechanism following the minimum, and the admin's sysctl never lost: kill -9
# while lowered, an admin's change during a lowered window, a read-only
# /proc/sys.
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/oci.sh"
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
cat >/tmp/expiry.conf <<EOC
[policy "wbgtest/g1"]
dirty_expire = 3s
mechanism = global
[policy "wbgtest/g2"]
dirty_expire = 2s
mechanism = global
[policy "wbgtest/pod-*"]
allow_annotation = yes
[policy "wbgtest/ga"]
mechanism = global
allow_annotation = yes
EOC
daemon_start "$WBG_BUILD" --config /tmp/expiry.conf --log-level=debug
check "wbguardd starts" test $? = 0
mkdir -p /sys/fs/cgroup/wbgtest
echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control

# Three pods appending 8 MiB each, then idle: a (crun, annotation 1s),
# b (runc, annotation 3 s as 300), c (crun, no annotation: the kernel's);
# and d with a bad annotation. (The kernel writes a new container's data
# after about 5 s by itself, on 6.1 and 6.12 alike: its fresh cgroup wb has
# no writeout history, so its share of the background threshold is about
# nothing and the next periodic wakeup finds it over. Hence expiries below
# that.)
for p in a b c d; do oci_bundle /tmp/oci-$p; done
# Each pod's dirty age: from the first time file_dirty > 0 to file_dirty 0,
# polled every 0.05 s from before the containers start, by one process
# (a shell loop forking awk three times a round lagged by most of a second
# under TCG while the containers started, and made b look early).
rm -f /tmp/first-* /tmp/clean-*
python3 -c '
import os, time
end = time.time() + 25
first, clean = {}, {}
while time.time() < end:
    for p in "abc":
        try:
            with open("/sys/fs/cgroup/wbgtest/pod-%s/memory.stat" % p) as f:
                d = next(int(l.split()[1]) for l in f if l.startswith("file_dirty "))
        except (OSError, StopIteration):
            continue
        now = time.time()
        if d > 0 and p not in first:
            first[p] = now
            open("/tmp/first-" + p, "w").write("%.3f" % now)
        if p in first and d == 0 and p not in clean:
            clean[p] = now
            open("/tmp/clean-" + p, "w").write("%.3f" % now)
    # done once a and b are clean and c has been dirty 2 s longer than b
    # was (or is clean): what the checks below compare, and no wait for c
    if "a" in clean and "b" in clean and "c" in first and \
            ("c" in clean or now - first["c"] > clean["b"] - first["b"] + 2):
        break
    time.sleep(0.05)' &
poller=$!
sleep 1 # python under TCG: started before the containers are
w='dd if=/dev/zero of=/data/f bs=1M count=8 2>/dev/null; sleep 60'
oci_run crun /tmp/oci-a pod-a wbgtest/pod-a '{"wbguard.io/dirty-expire":"1s"}' /mnt/ext4/a "$w"
oci_run runc /tmp/oci-b pod-b wbgtest/pod-b '{"wbguard.io/dirty-expire":"300"}' /mnt/ext4/b "$w"
oci_run crun /tmp/oci-c pod-c wbgtest/pod-c '{}' /mnt/ext4/c "$w"
oci_run crun /tmp/oci-d pod-d wbgtest/pod-d '{"wbguard.io/dirty-expire":"fast"}' /mnt/ext4/d "$w"
check "four containers run (crun and runc)" test "$(ls -d /sys/fs/cgroup/wbgtest/pod-* | wc -l)" = 4
wait $poller
age() { [ -e /tmp/clean-$1 ] && awk -v a="$(cat /tmp/first-$1)" -v b="$(cat /tmp/clean-$1)" 'BEGIN { printf "%.1f", b - a }'; }
echo "# dirty age: a (1 s) $(age a) s, b (3 s) $(age b) s, c (the kernel's) $(age c || echo 'still dirty at the end') s"
check "pod a's data written back within 1 s + 1" fgt 2 "$(age a)"
check "pod b's data written back within 3 s + 1" fgt 4 "$(age b)"
check "pod b not written back before its own expiry" fgt "$(age b)" 2.5
check "pod c, no policy: no writeback by wbguardd" test -z "$(grep 'pod-c: expiry writeback' /wbg-out/wbguardd.log)"
check "pod c, no policy: dirty longer than b" fgt "$(age c || echo 99)" "$(age b)"
grep -q "wbgtest/pod-a: dirty expiry 1.00 s, per-pod, from annotation wbguard.io/dirty-expire" /wbg-out/wbguardd.log
check "pod a's policy from its annotation (crun's state)" test $? = 0
grep -q "wbgtest/pod-b: dirty expiry 3.00 s, per-pod, from annotation" /wbg-out/wbguardd.log
check "pod b's policy from its annotation (runc's state)" test $? = 0
grep "pod-d" /wbg-out/wbguardd.log | grep -q "annotation wbguard.io/dirty-expire = 'fast': expected"
check "pod d's bad annotation named in the log" test $? = 0
scrape_metrics
check "metrics: the bad annotation counted" test "$(metric wbguard_expiry_policy_errors_total)" = 1
check "metrics: two per-pod policies" test "$(metric 'wbguard_expiry_pods{mechanism="per-pod"}')" = 2
check "metrics: per-pod writebacks ran" test "$(metric wbguard_expiry_writebacks_total)" -ge 2
check "the per-folio expiry program attached while pods have a per-pod expiry" \
	test "$(metric 'wbguard_bpf_program_attached{program="expiry_folio",reason=""}')" = 1
check "per-pod never touched the sysctl" test "$(cat $sysctl)" = "$admin"
for p in a b c d; do oci_rm crun pod-$p; oci_rm runc pod-$p; done
i=0
until { scrape_metrics && [ "$(metric 'wbguard_bpf_program_attached{program="expiry_folio",reason="idle"}')" = 0 ]; } || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
check "the per-folio expiry program detached after the last such pod" \
	test "$(metric 'wbguard_bpf_program_attached{program="expiry_folio",reason="idle"}')" = 0

# A tenant's annotation with the global mechanism: "10ms" is held at the
# admin's floor ([expiry] min, 1 s), never 1 cs on the whole node; where no
# policy allows annotations, one is ignored and said.
oci_bundle /tmp/oci-ga
oci_bundle /tmp/oci-gx
oci_run crun /tmp/oci-ga pod-ga wbgtest/ga '{"wbguard.io/dirty-expire":"10ms"}' /mnt/ext4/ga 'sleep 60'
oci_run crun /tmp/oci-gx pod-gx wbgtest/gx '{"wbguard.io/dirty-expire":"1"}' /mnt/ext4/gx 'sleep 60'
sleep 1
check "global annotation '10ms': held at the admin's floor (100), not 1 ($(cat $sysctl))" test "$(cat $sysctl)" = 100
grep -q "wbgtest/gx.*ignored: no \[policy\] matching" /wbg-out/wbguardd.log
check "an annotation no policy allows is ignored, and said" test $? = 0
oci_rm crun pod-ga
oci_rm crun pod-gx
sleep 0.5
check "both gone: the admin's value again" test "$(cat $sysctl)" = "$admin"

# The global mechanism follows the minimum as pods come and go.
mkdir /sys/fs/cgroup/wbgtest/g1 /sys/fs/cgroup/wbgtest/g2
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g1/cgroup.procs; exec sleep 300' &
g1=$!
sleep 0.5
check "global: g1 (3 s) lowers it to 300" test "$(cat $sysctl)" = 300
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g2/cgroup.procs; exec sleep 300' &
g2=$!
sleep 0.5
check "global: g2 (2 s) lowers it to 200" test "$(cat $sysctl)" = 200
"$WBG_BUILD/daemon/wbguardctl" status >/wbg-out/status.txt
cat /wbg-out/status.txt | sed 's/^/# status: /'
check "wbguardctl status names the holders and the admin's value" \
	sh -c "grep -q 'lowered by wbguardd; the admin.s value $admin' /wbg-out/status.txt && grep -q 'held at 200.*wbgtest/g2' /wbg-out/status.txt"
kill $g2; wait $g2 2>/dev/null
sleep 0.5
check "global: g2 gone, back to g1's 300" test "$(cat $sysctl)" = 300

# kill -9 while lowered; the next start restores the admin's value.
kill -9 $DAEMON; wait $DAEMON 2>/dev/null
check "after kill -9 the value is still lowered" test "$(cat $sysctl)" = 300
check "and the state file holds the admin's value" test "$(jq .original /run/wbguard/sysctl.json)" = "$admin"
cp /wbg-out/wbguardd.log /wbg-out/wbguardd-1.log
printf '[expiry]\nboost = off\n' >/tmp/plain.conf
daemon_start "$WBG_BUILD" --config /tmp/plain.conf
check "restart" test $? = 0
check "the restart restores the admin's value" test "$(cat $sysctl)" = "$admin"
check "no state file left" test ! -e /run/wbguard/sysctl.json
daemon_stop
kill $g1; wait $g1 2>/dev/null

# An admin's change during a lowered window is adopted, not overwritten.
daemon_start "$WBG_BUILD" --config /tmp/expiry.conf
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g1/cgroup.procs; exec sleep 300' &
g1=$!
sleep 0.5
check "lowered to 300 again" test "$(cat $sysctl)" = 300
echo 1234 >$sysctl
sleep 6 # wbguardd looks every 5 s while it holds the value
check "the admin's 1234 is not overwritten" test "$(cat $sysctl)" = 1234
grep -q "changed to 1234 behind wbguardd's back" /wbg-out/wbguardd.log
check "and the log says it was adopted" test $? = 0
kill $g1; wait $g1 2>/dev/null
sleep 0.5
check "g1 gone: still the admin's 1234" test "$(cat $sysctl)" = 1234
daemon_stop
check "stop leaves the admin's 1234" test "$(cat $sysctl)" = 1234
echo "$admin" >$sysctl

# A read-only /proc/sys: a clear error and a metric, no crash.
unshare -m sh -c "mount -o bind,ro /proc/sys /proc/sys && exec $WBG_BUILD/daemon/wbguardd --config /tmp/expiry.conf" >/wbg-out/ro.log 2>&1 &
ro=$!
i=0
while ! grep -q '^info: Watching' /wbg-out/ro.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/g1/cgroup.procs; exec sleep 300' &
g1=$!
sleep 1
curl -sf http://127.0.0.1:9573/metrics >/wbg-out/metrics.txt
check "read-only /proc/sys: wbguardd still runs" kill -0 $ro
check "read-only /proc/sys: the error names it" grep -q "/proc/sys is read-only here" /wbg-out/ro.log
check "read-only /proc/sys: counted in a metric" test "$(metric wbguard_sysctl_errors_total)" -ge 1
check "read-only /proc/sys: the value untouched" test "$(cat $sysctl)" = "$admin"
kill $g1 $ro; wait $g1 $ro 2>/dev/null

# The handover boost: no flush (only the boost acts), the kernel's fallback
# missing or unknown, a removal that left dirty data: the sysctl is held at
# 500 for the window, then the admin's value is back.
printf '[flush]\nenable = no\n[expiry]\nboost = 5s\nboost_window_sec = 3\n' >/tmp/boost.conf
daemon_start "$WBG_BUILD" --config /tmp/boost.conf
check "wbguardd starts (flush off, boost on)" test $? = 0
mkdir /sys/fs/cgroup/wbgtest/gone
sh -c 'echo $$ >/sys/fs/cgroup/wbgtest/gone/cgroup.procs; exec dd if=/dev/zero of=/mnt/ext4/gone bs=1M count=8 status=none'
sleep 0.5
check "boost: a removal's flush did not happen, the sysctl is at 500" test "$(cat $sysctl)" = 500
sleep 3.5
check "boost: the window over, the admin's value is back" test "$(cat $sysctl)" = "$admin"
scrape_metrics
check "boost: counted" test "$(metric wbguard_expiry_boosts_total)" = 1
daemon_stop
rmdir /sys/fs/cgroup/wbgtest/gone
rmdir /sys/fs/cgroup/wbgtest/g1 /sys/fs/cgroup/wbgtest/g2 /sys/fs/cgroup/wbgtest/pod-* /sys/fs/cgroup/wbgtest 2>/dev/null || true
