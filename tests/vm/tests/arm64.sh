# vm: --kernel trixie-arm64 --disks ext4
# arm64 as clouds run it: Debian 13's arm64 kernel package and userland
# (tests/vm/make-root) on qemu's virt board under TCG, with the binaries and
# BPF object tests/distro/trixie cross-built (meson's cross file, arm64's
# vmlinux.h). wbguardd's BPF programs attach (CO-RE against this kernel's
# BTF), wbguardctl verify judges the kernel, and the suite's stall
# reproduction runs unguarded and with wbguardd.
. "$WBG_TOP/tests/vm/lib.sh"
A=$WBG_BUILD/distro/trixie/b-arm64
if [ ! -x "$A/daemon/wbguardd" ] || [ ! -x "$A/tests/wbstall" ]; then
	skip "arm64: no cross build ($A: tests/distro/trixie makes it)"
	exit 0
fi
# (make-root unpacks the kernel package rather than installing it)
check "the guest is arm64 on Debian 13's kernel ($(uname -m), $(uname -r))" \
	sh -c "[ \"\$(uname -m)\" = aarch64 ] && [ -e /boot/vmlinuz-$(uname -r) ] && uname -r | grep -q '+deb13-arm64\$'"
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)

daemon_start "$A"
check "wbguardd (cross-built) starts on arm64" test $? = 0
scrape_metrics
bpf_programs
check "its BPF programs attach (wbguard_bpf_program_attached), none refused by arm64's verifier or JIT ($(awk '$2 == 1' /wbg-out/programs.txt | wc -l) attached)" \
	sh -c "grep -q '^wbguard_bpf_program_attached{program=\"[a-z_]*\",reason=\"\"} 1' /wbg-out/metrics.txt &&
		! grep -q 'reason=\"load_refused\"' /wbg-out/metrics.txt && grep -q 'BPF on' /wbg-out/wbguardd.log"
check "its kernel verdict is exported" test -n "$(verdict dying_wb_fallback)"
daemon_stop
check "a stop exits cleanly with the admin's sysctl" sh -c "[ $DAEMON_RC = 0 ] && [ \"\$(cat $sysctl)\" = $admin ]"

for try in 1 2; do
	"$A/daemon/wbguardctl" verify --json --dir /mnt/ext4 >/wbg-out/verify.json 2>/wbg-out/verify.err
	rc=$?
	[ $rc = 5 ] || break
done
check "wbguardctl verify judges the arm64 kernel: missing, exit 1 (exit $rc, $(jqv /wbg-out/verify.json .dying_wb_fallback.state))" \
	sh -c "[ $rc = 1 ] && [ \"\$(jq -r .dying_wb_fallback.state /wbg-out/verify.json)\" = missing ]"

# One stall case, unguarded and with wbguardd, the periodic flusher off
wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
echo 0 >/proc/sys/vm/dirty_writeback_centisecs
"$A/tests/wbstall" $STALL_RUN --deadline 24 --name wbgu --json /wbg-out/unguarded.json >/dev/null 2>/wbg-out/unguarded.err
echo "# unguarded: worst lag $(jqv /wbg-out/unguarded.json .new.worst_lag_s) s, -ENOENT $(jqv /wbg-out/unguarded.json .cgroup_writeback_by_id.old_target.enoent)"
daemon_start "$A"
"$A/tests/wbstall" $STALL_RUN --name wbgg --json /wbg-out/guarded.json >/dev/null 2>/wbg-out/guarded.err
daemon_stop
echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
stall_judge "arm64, wbguardd" /wbg-out/guarded.json /wbg-out/unguarded.json
