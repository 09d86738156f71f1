#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# node-problem-detector's custom plugin for the condition WbguardUnguarded:
# this node's kernel lacks the dying-wb fallback and wbguardd is not
# guarding it. One line on stdout (the condition's message) and NPD's exit
# status: 0 OK, 1 NonOK (the problem), anything else Unknown (5 here, as
# wbguardctl verify says "cannot tell").
#
#   OK       wbguardd runs and mitigates, or the kernel has the fallback
#   NonOK    the fallback is missing, and wbguardd runs with mitigation off
#            or does not run at all
#   Unknown  no verdict to be had: wbguardd unreachable and no probe
#            (--no-verify, or the probe cannot run: in a pod), a
#            wbguardctl that hung, or wbguardd running with mitigation
#            off on a kernel it has no verdict for yet
#
# Reading changes nothing: while wbguardd answers, its verdict is read
# (wbguardctl status, which changes nothing in it) and the probe never runs,
# since the probe's flushes would be evidence wbguardd counts. Only when
# wbguardd does not answer does `wbguardctl verify` probe the kernel (a few
# MiB in a scratch cgroup, seconds; it leaves nothing behind). Every
# wbguardctl runs under timeout(1), so a hung one cannot hold the check:
# each gets TERM at its bound (verify removes what it made on it) and KILL
# 2 s (verify: 10 s) later; with the defaults the whole check ends within
# 62 s, below the rule's timeout in wbguard-plugin.json.
#
# Usage: check-wbguard.sh [--socket PATH] [--no-verify]
#                         [--status-timeout SEC] [--verify-timeout SEC]
#   --status-timeout  bound of wbguardctl status (default 10)
#   --verify-timeout  bound of wbguardctl verify (default 40), whose probe
#                     gives up on the kernel after half of it
# WBGUARDCTL names the wbguardctl to run (default: wbguardctl on PATH).
set -u

OK=0
NONOK=1
UNKNOWN=5

ctl=${WBGUARDCTL:-wbguardctl}
socket=
verify=yes
status_timeout=10
verify_timeout=40

say() {
	printf '%s\n' "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--socket) socket=${2:-}; shift ;;
	--no-verify) verify=no ;;
	--status-timeout) status_timeout=${2:-}; shift ;;
	--verify-timeout) verify_timeout=${2:-}; shift ;;
	*) say "check-wbguard.sh: unknown argument '$1'"; exit 2 ;;
	esac
	shift
done
for t in "$status_timeout" "$verify_timeout"; do
	case $t in
	'' | 0 | *[!0-9]*) say "check-wbguard.sh: timeouts are whole seconds above 0"; exit 2 ;;
	esac
done
if ! command -v timeout >/dev/null 2>&1; then
	say "cannot bound wbguardctl: no timeout(1) here"
	exit $UNKNOWN
fi
if ! command -v "$ctl" >/dev/null 2>&1; then
	say "no $ctl here: cannot ask wbguardd or probe the kernel"
	exit $UNKNOWN
fi
set --
[ -n "$socket" ] && set -- --socket "$socket"

out=$(timeout -k 2 "$status_timeout" "$ctl" "$@" status --json 2>/dev/null)
rc=$?
case $rc in
0)
	verdict=$(printf '%s\n' "$out" | sed -n 's/.*"dying_wb_fallback": *"\([a-z]*\)".*/\1/p' | head -n 1)
	if printf '%s\n' "$out" | grep -q '"mitigating": *true'; then
		mitigating=yes
	elif printf '%s\n' "$out" | grep -q '"mitigating": *false'; then
		mitigating=no
	else
		mitigating=
	fi
	case $verdict/$mitigating in
	active/yes | active/no) say "kernel has the dying-wb fallback (wbguardd running)"; exit $OK ;;
	missing/yes | unknown/yes) say "wbguardd guards this node (dying-wb fallback $verdict)"; exit $OK ;;
	missing/no) say "dying-wb fallback missing; wbguardd runs with mitigation off"; exit $NONOK ;;
	unknown/no) say "dying-wb fallback unknown yet; wbguardd runs with mitigation off"; exit $UNKNOWN ;;
	*) say "cannot read wbguardctl status --json"; exit $UNKNOWN ;;
	esac
	;;
3) ;; # not running, or refusing us: below
124 | 137) say "wbguardctl status did not return within ${status_timeout} s"; exit $UNKNOWN ;;
*) say "wbguardctl status failed (exit $rc)"; exit $UNKNOWN ;;
esac

if [ "$verify" = no ]; then
	say "wbguardd not reachable; kernel not probed (--no-verify)"
	exit $UNKNOWN
fi
probe=$((verify_timeout / 2))
[ "$probe" -ge 1 ] || probe=1
timeout -k 10 "$verify_timeout" "$ctl" "$@" verify --timeout "$probe" >/dev/null 2>&1
rc=$?
case $rc in
0) say "kernel has the dying-wb fallback (wbguardd not running)"; exit $OK ;;
1) say "dying-wb fallback missing and wbguardd not running"; exit $NONOK ;;
124 | 137) say "wbguardd not reachable; wbguardctl verify timed out"; exit $UNKNOWN ;;
*) say "wbguardd not reachable; verify cannot tell (exit $rc)"; exit $UNKNOWN ;;
esac
