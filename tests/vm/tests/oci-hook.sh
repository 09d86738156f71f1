# vm: --kernel stock --disks ext4
# wbguard-oci-hook with Debian's crun and runc: real bundles with the hook
# at createRuntime and poststop; the container's data is written back by the
# time the runtime's delete returns. Malformed and hostile input: a clear
# error at createRuntime, never a failure at poststop, nothing flushed that
# the container does not name.
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/oci.sh"
hook=$WBG_BUILD/hooks/wbguard-oci-hook
mkdir -p /sys/fs/cgroup/wbgtest
# The runtimes run hooks with their output discarded: a wrapper keeps it,
# and records each call and its exit status.
cat >/tmp/hook-wrap <<EOW
#!/bin/sh
stage=\$(eval echo \\\${\$#})
$hook "\$@" 2>>/wbg-out/hook-\$stage.log
rc=\$?
echo "\$stage rc=\$rc" >>/wbg-out/hook-calls.txt
exit \$rc
EOW
chmod +x /tmp/hook-wrap
dirty() { awk '$1 == "Dirty:" {print $2}' /proc/meminfo; }
for rt in crun runc; do
	b=/tmp/oci-$rt
	oci_bundle $b
	jq --arg h /tmp/hook-wrap '.hooks = {
		createRuntime: [{path: $h, args: ["wbguard-oci-hook", "createRuntime"]}],
		poststop: [{path: $h, args: ["wbguard-oci-hook", "--timeout", "20", "poststop"]}]}' \
		$b/config.json >$b/c && mv $b/c $b/config.json
	oci_run $rt $b hook-$rt wbgtest/hook-$rt '{}' /mnt/ext4/$rt 'dd if=/dev/zero of=/data/f bs=1M count=16 2>/dev/null'
	check "$rt: the hook ran at createRuntime and resolved the cgroup" \
		grep -q "container hook-$rt: cgroup wbgtest/hook-$rt" /wbg-out/hook-createRuntime.log
	i=0; while [ "$($rt state hook-$rt 2>/dev/null | jq -r .status)" = running ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	before=$(dirty)
	$rt delete hook-$rt 2>/wbg-out/$rt-delete.txt
	check "$rt: delete succeeds with the hook at poststop" test $? = 0
	check "$rt: the hook ran at poststop and wrote back" grep -q "container hook-$rt: its filesystems written back" /wbg-out/hook-poststop.log
	after=$(dirty)
	echo "# $rt: Dirty $before kB before delete, $after kB after"
	check "$rt: the container's 16 MiB were dirty before delete" test "$before" -gt 12000
	check "$rt: written back by the time delete returned" test "$after" -lt 4000
done

check "every hook call exited 0" test -z "$(grep -v 'rc=0' /wbg-out/hook-calls.txt)" -a "$(wc -l </wbg-out/hook-calls.txt)" = 4

# Malformed and hostile state, straight to the hook.
echo '{"id":"x"' | $hook createRuntime 2>/wbg-out/h1.txt
check "truncated state: createRuntime exits 1" test $? = 1
check "truncated state: the error says so" grep -q "Bad container state on stdin: state: not JSON" /wbg-out/h1.txt
echo '{"id":"x"' | $hook poststop 2>/dev/null
check "truncated state: poststop still exits 0" test $? = 0
echo '{"bundle":"/tmp/oci-crun"}' | $hook createRuntime 2>/wbg-out/h2.txt
check "missing id: named" sh -c "test $? = 1 && grep -q \"'id' is missing\" /wbg-out/h2.txt"
head -c 3000000 /dev/zero | tr '\0' ' ' | $hook createRuntime 2>/wbg-out/h3.txt
check "3 MB of input: refused as too large" sh -c "test $? = 1 && grep -q 'too large' /wbg-out/h3.txt"
mkdir -p /tmp/evil && jq '.linux.cgroupsPath = "/wbgtest/../../etc"' /tmp/oci-crun/config.json >/tmp/evil/config.json
echo '{"id":"evil","bundle":"/tmp/evil"}' | $hook createRuntime 2>/wbg-out/h4.txt
check "a cgroupsPath with '..': exit 1, named" sh -c "test $? = 1 && grep -q \"linux.cgroupsPath '/wbgtest/../../etc' is not a cgroup path\" /wbg-out/h4.txt"
# poststop syncs only what the container names: a bundle whose config.json
# names nothing writable leaves other dirty data alone.
jq '.mounts = [] | .root.path = "/nonexistent"' /tmp/oci-crun/config.json >/tmp/evil/config.json
rm -rf /tmp/evil/rootfs
dd if=/dev/zero of=/mnt/ext4/other bs=1M count=16 status=none
before=$(dirty)
echo '{"id":"evil","bundle":"/tmp/evil","status":"stopped"}' | $hook poststop 2>/dev/null
check "poststop of a container naming no writable mount: exit 0" test $? = 0
check "and the other 16 MiB stay dirty" test "$(dirty)" -gt 12000
echo "# other data: Dirty $before kB before, $(dirty) kB after"
rm -f /mnt/ext4/other
