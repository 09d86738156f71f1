# vm: --kernel stock --disks ext4
# wbguardd, wbguardctl and the hook built with clang under AddressSanitizer
# and UndefinedBehaviorSanitizer (build-san, made by tests/sanitize/run),
# through handovers, the control API, the hook, a reload and SIGTERM: no
# report, leaks included.
. "$WBG_TOP/tests/vm/lib.sh"
S=$WBG_TOP/build-san
if [ ! -x $S/daemon/wbguardd ]; then
	skip "asan: no sanitizer build (run tests/sanitize/run first)"
	exit 0
fi
export ASAN_OPTIONS=log_path=/wbg-out/asan:detect_leaks=1 UBSAN_OPTIONS=log_path=/wbg-out/ubsan:print_stacktrace=1:halt_on_error=1
printf '[metrics]\ntextfile = /run/wbguard/wbguard.prom\n' >/tmp/asan.conf
daemon_start $S --config /tmp/asan.conf
check "the sanitizer build of wbguardd starts (BPF and all)" grep -q 'Watching .* BPF on' /wbg-out/wbguardd.log
cg=/sys/fs/cgroup/wbgtest
mkdir -p $cg && echo +memory >$cg/cgroup.subtree_control
for n in a b; do
	mkdir $cg/$n
	sh -c "echo \$\$ >$cg/$n/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/$n bs=1M count=8 status=none"
	sleep 0.5
	rmdir $cg/$n
done
mkdir $cg/live
sh -c "echo \$\$ >$cg/live/cgroup.procs; dd if=/dev/zero of=/mnt/ext4/live bs=1M count=8 status=none; exec sleep 30" &
lp=$!
sleep 1
$S/daemon/wbguardctl flush --wait /wbgtest/live >/dev/null
check "flush --wait through the API" test $? = 0
for c in status list handovers metrics; do $S/daemon/wbguardctl $c >/dev/null 2>&1 || echo "# wbguardctl $c failed"; done
$S/daemon/wbguardctl flush /../etc 2>/dev/null
jq -n --arg cg /wbgtest/live '{ociVersion: "1.0.2", linux: {cgroupsPath: $cg}, mounts: [], annotations: {"io.kubernetes.pod.name": "p"}}' >/tmp/b-config.json
mkdir -p /tmp/asan-bundle && mv /tmp/b-config.json /tmp/asan-bundle/config.json
echo "{\"ociVersion\":\"1.0.2\",\"id\":\"asan-1\",\"status\":\"creating\",\"pid\":$lp,\"bundle\":\"/tmp/asan-bundle\"}" | $S/hooks/wbguard-oci-hook 2>/wbg-out/hook.txt
check "the hook registers" grep -q 'registered with wbguardd' /wbg-out/hook.txt
kill $lp; wait $lp 2>/dev/null
echo '{"ociVersion":"1.0.2","id":"asan-1","status":"stopped","bundle":"/tmp/asan-bundle"}' | $S/hooks/wbguard-oci-hook 2>>/wbg-out/hook.txt
rmdir $cg/live
curl -sf http://127.0.0.1:9573/metrics >/dev/null
kill -HUP $DAEMON
sleep 1
daemon_stop
check "SIGTERM: exit 0" test $? = 0
ls /wbg-out/asan.* /wbg-out/ubsan.* 2>/dev/null | sed 's/^/# report: /'
for f in /wbg-out/asan.* /wbg-out/ubsan.*; do [ -e "$f" ] && head -20 "$f" | sed 's/^/# /'; done
check "no AddressSanitizer or UndefinedBehaviorSanitizer report (leaks included)" test -z "$(ls /wbg-out/asan.* /wbg-out/ubsan.* 2>/dev/null)"
