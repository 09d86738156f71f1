# vm: --kernel trixie --systemd --disks ext4
# vm-alone: it installs the package in the guest's root
# Debian 13 as a node runs it: trixie's own kernel package and userland
# (tests/vm/make-root), systemd as PID 1, and the .deb tests/distro/trixie
# built installed with apt, which starts the unit. Then what an operator
# does first: wbguardctl verify judges this kernel, doctor reads the node,
# and one stall case (the suite's reproduction, STALL_RUN) is cured by the
# packaged service against the same case unguarded.
. "$WBG_TOP/tests/vm/lib.sh"
deb=$(ls "$WBG_BUILD"/distro/trixie/wbguard_*_amd64.deb 2>/dev/null | head -1)
if [ -z "$deb" ]; then
	skip "debian13: no Debian 13 package (tests/distro/trixie builds it)"
	exit 0
fi
. /etc/os-release
check "the guest is Debian 13 on its own kernel ($PRETTY_NAME, $(uname -r))" \
	sh -c "[ '$VERSION_ID' = 13 ] && dpkg -S /boot/vmlinuz-$(uname -r) >/dev/null"
ctl=/usr/bin/wbguardctl
sysctl=/proc/sys/vm/dirty_expire_centisecs
admin=$(cat $sysctl)
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" >/wbg-out/apt-install.log 2>&1
check "apt installs $(basename "$deb") (no network: its Depends are in the root)" test $? = 0
i=0; while ! systemctl is-active --quiet wbguard.service && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
check "the unit is enabled and running, with no other step" \
	sh -c "[ \"\$(systemctl is-enabled wbguard.service)\" = enabled ] && systemctl is-active --quiet wbguard.service"
journalctl -u wbguard.service --no-pager >/wbg-out/journal.txt
check "watching, with BPF, under the unit's hardening" grep -q 'Watching .* BPF on' /wbg-out/journal.txt
scrape_metrics
bpf_programs
check "its BPF programs attach on Debian 13's kernel (wbguard_bpf_program_attached)" \
	sh -c "grep -q '^wbguard_bpf_program_attached{.*} 1' /wbg-out/metrics.txt"

# verify: a probe of its own, beside the running daemon; the kernel has no
# dying-wb fallback (none is upstream), so missing, exit 1; a probe that saw
# no foreign flush (TCG timing) says unknown (5) and runs once more
for try in 1 2; do
	$ctl verify --json --dir /mnt/ext4 >/wbg-out/verify.json 2>/wbg-out/verify.err
	rc=$?
	[ $rc = 5 ] || break
done
check "wbguardctl verify judges the kernel: missing, exit 1 (exit $rc, $(jqv /wbg-out/verify.json .dying_wb_fallback.state))" \
	sh -c "[ $rc = 1 ] && [ \"\$(jq -r .dying_wb_fallback.state /wbg-out/verify.json)\" = missing ]"
$ctl doctor --json >/wbg-out/doctor.json 2>/dev/null
jq -r '.checks[] | "# doctor: \(.result) \(.check): \(.detail)"' /wbg-out/doctor.json 2>/dev/null
check "wbguardctl doctor: cgroup v2 and memory, BTF, wbguardd answering" \
	sh -c "jq -e '[.checks[] | select((.check == \"cgroup v2, memory\" or .check == \"BTF\" or .check == \"wbguardd\") and .result == \"ok\")] | length == 3' /wbg-out/doctor.json >/dev/null"

# One stall case: unguarded (the service stopped), then with the service
wb=$(cat /proc/sys/vm/dirty_writeback_centisecs)
echo 0 >/proc/sys/vm/dirty_writeback_centisecs
systemctl stop wbguard.service
"$WBG_BUILD/tests/wbstall" $STALL_RUN --deadline 24 --name wbgu --json /wbg-out/unguarded.json >/dev/null 2>/wbg-out/unguarded.err
echo "# unguarded: worst lag $(jqv /wbg-out/unguarded.json .new.worst_lag_s) s, -ENOENT $(jqv /wbg-out/unguarded.json .cgroup_writeback_by_id.old_target.enoent)"
systemctl start wbguard.service
i=0; while ! systemctl is-active --quiet wbguard.service && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
"$WBG_BUILD/tests/wbstall" $STALL_RUN --name wbgg --json /wbg-out/guarded.json >/dev/null 2>/wbg-out/guarded.err
echo "$wb" >/proc/sys/vm/dirty_writeback_centisecs
stall_judge "Debian 13, the packaged service" /wbg-out/guarded.json /wbg-out/unguarded.json
systemctl stop wbguard.service
check "a stop restores the admin's sysctl" test "$(cat $sysctl)" = "$admin"
