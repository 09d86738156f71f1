# vm: --kernel stock --disks ext4
# The OCI hook never stalls the runtime (issue 13): against a wbguardd that
# is SIGSTOPped (it accepts connections and never answers), each stage costs
# its --timeout and no more; and under runc, whose hooks' output it reads to
# the end, a fallback flush stuck in syncfs (ext4 on a suspended dm device)
# does not hold runc delete once the hook has given up.
. "$WBG_TOP/tests/vm/lib.sh"
. "$WBG_TOP/tests/vm/oci.sh"
hook=$WBG_BUILD/hooks/wbguard-oci-hook
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
mkdir -p /sys/fs/cgroup/wbgtest && echo +memory >/sys/fs/cgroup/wbgtest/cgroup.subtree_control

# 9. A stopped wbguardd.
mkdir -p /tmp/b9/rootfs
echo '{"linux":{"cgroupsPath":"/wbgtest/b9"}}' >/tmp/b9/config.json
state() { printf '{"ociVersion":"1.0.2","id":"b9","status":"%s","pid":0,"bundle":"/tmp/b9"}' "$1"; }
daemon_start "$WBG_BUILD"
check "wbguardd starts" test $? = 0
kill -STOP $DAEMON
t0=$(date +%s%N)
state creating | timeout 120 $hook --timeout 1 createRuntime 2>/wbg-out/create.log
rc=$? took=$(ms $t0)
check "createRuntime against a SIGSTOPped wbguardd: exit 0 ($rc) in its 1 s timeout (${took} ms)" \
	test $rc = 0 -a $took -lt 2500
t0=$(date +%s%N)
state stopped | timeout 120 $hook --timeout 1 poststop 2>/wbg-out/post.log
rc=$? took=$(ms $t0)
check "poststop against it: exit 0 ($rc) in its 1 s timeout (${took} ms)" test $rc = 0 -a $took -lt 2500
check "poststop says the daemon does not answer and flushes itself" grep -q "does not answer" /wbg-out/post.log
kill -CONT $DAEMON
daemon_stop

# 10. runc, no wbguardd, the container's writable mount on a filesystem
# whose writeback hangs: the hook's own syncfs never returns, the hook gives
# up at its timeout, and runc delete returns then.
truncate -s 64M /mnt/ext4/slow.img
lo=$(losetup -f --show /mnt/ext4/slow.img)
dmsetup create wbgslow --table "0 $(blockdev --getsz $lo) linear $lo 0" && dmsetup mknodes wbgslow
mkfs.ext4 -q /dev/mapper/wbgslow && mkdir -p /mnt/slow && mount /dev/mapper/wbgslow /mnt/slow
mkdir -p /mnt/slow/data
b=/tmp/b10
oci_bundle $b
jq --arg h "$hook" '.hooks = {poststop: [{path: $h, args: ["wbguard-oci-hook", "--socket", "/run/none", "--timeout", "2", "poststop"]}]}' \
	$b/config.json >$b/c && mv $b/c $b/config.json
oci_run runc $b b10 wbgtest/b10 '{}' /mnt/slow/data "dd if=/dev/zero of=/data/f bs=1M count=8 2>/dev/null; sleep 3"
sleep 2
check "the container wrote to the slow filesystem" test -s /mnt/slow/data/f
dmsetup suspend --nolockfs --noflush wbgslow
i=0; while [ "$(runc state b10 2>/dev/null | jq -r .status)" = running ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
t0=$(date +%s%N)
timeout 60 runc delete b10 2>/wbg-out/delete.txt
rc=$? took=$(ms $t0)
check "runc delete returns while the hook's syncfs hangs (exit $rc, ${took} ms; the hook's timeout is 2 s)" \
	test $rc = 0 -a $took -lt 6000
pgrep -f "wbguard-oci-hook.*poststop" >/wbg-out/children.txt
check "the detached flush child is still in the kernel (it finishes on its own)" test -s /wbg-out/children.txt
dmsetup resume wbgslow
i=0; while pgrep -f "wbguard-oci-hook.*poststop" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "and ends once the device is back" test -z "$(pgrep -f 'wbguard-oci-hook.*poststop')"
umount /mnt/slow
dmsetup remove wbgslow
losetup -d $lo
