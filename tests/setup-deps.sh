#!/bin/sh
# Installs what the project needs from Debian's packages, in two parts:
#   tests/setup-deps.sh --build   what building needs: debian/control's
#                                 Build-Depends (apt-get build-dep), the
#                                 compiler and dpkg-dev; nothing else
#   tests/setup-deps.sh --lab     the test and benchmark lab on top: qemu and
#                                 what its guests run, container runtimes,
#                                 prometheus, PostgreSQL, linters, lintian...
#   tests/setup-deps.sh           both (tests/run and tests/demo run this)
#   tests/setup-deps.sh --resolve both lists resolved by apt (apt-get -s),
#                                 nothing installed: exit 1 naming what this
#                                 distribution lacks (tests/distro/trixie
#                                 runs it in Debian 13, tests/deps on the host)
# Every name is one the distribution's archive resolves itself: metapackages
# where Debian has one (postgresql is 15 on Debian 12, 17 on 13), -dev
# packages rather than versioned runtime libraries (the t64 renames).
# Idempotent: only what is missing is installed, and apt's lists are only
# refreshed when something is.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=1 lab=1 resolve=0
case "${1:-}" in
--build) lab=0 ;;
--lab) build=0 ;;
--resolve) resolve=1 ;;
"") ;;
*) echo "usage: tests/setup-deps.sh [--build|--lab|--resolve]" >&2; exit 2 ;;
esac

# The lab: tests/vm (qemu, the guests' tools, runtimes), tests/bench,
# tests/sanitize (clang-tidy, cppcheck, valgrind, libFuzzer's llvm),
# tests/deb (lintian), tests/kubernetes (podman, buildah), tests/prometheus,
# tools/release and tests/release (skopeo; qemu-user-static runs arm64's,
# arch-test lets mmdebstrap make a foreign-architecture chroot).
LAB="
llvm clang-tidy cppcheck strace valgrind libcgroup-dev
qemu-system-x86 qemu-system-arm qemu-utils busybox-static cpio kmod e2fsprogs xfsprogs btrfs-progs fdisk lvm2
bpftrace gnuplot-nox jq crun runc dbus systemd fio inotify-tools python3-yaml curl prometheus prometheus-node-exporter
apache2-utils openssl
man-db lintian fakeroot
podman buildah containerd mmdebstrap skopeo qemu-user-static arch-test
python3-grpcio python3-grpc-tools python3-protobuf gcc libc6-dev
postgresql
"
# What apt-get build-dep needs before it can read debian/control, and what
# Debian's build-essential gives every package build (not listed there).
BASE="dpkg-dev gcc libc6-dev binutils"

if [ $resolve = 1 ]; then
	# apt-get -s: what an install would do, as any user; "E:" names what
	# cannot be had (no such package, no candidate, a conflict)
	bad=0
	# the whole list at once, as the install resolves it: apt names each
	# package it cannot find ("Unable to locate package X", "Package 'X'
	# has no installation candidate") and each unmet dependency
	# shellcheck disable=SC2086
	rc=0 && err=$(apt-get -s -q install --no-install-recommends $BASE $LAB 2>&1 >/dev/null) || rc=$?
	if [ $rc -ne 0 ] || echo "$err" | grep -q '^E: '; then
		echo "$err" | grep '^E: \|^ ' | sed 's/^/setup-deps: /' >&2
		bad=1
	fi
	rc=0 && err=$(cd "$top" && apt-get -s -q build-dep --no-install-recommends ./ 2>&1 >/dev/null) || rc=$?
	if [ $rc -ne 0 ] || echo "$err" | grep -q '^E: '; then
		echo "setup-deps: debian/control's Build-Depends: $(echo "$err" | grep -m1 '^E: ')" >&2
		bad=1
	fi
	[ $bad = 0 ] && echo "setup-deps: every package of both lists and debian/control's Build-Depends resolves on $(. /etc/os-release && echo "$PRETTY_NAME")"
	exit $bad
fi

missing=""
want() {
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
}
# shellcheck disable=SC2086
[ $build = 1 ] && want $BASE
# shellcheck disable=SC2086
[ $lab = 1 ] && want $LAB
builddeps=0
if [ $build = 1 ]; then
	# debian/control is the one list of build dependencies
	if [ -n "$missing" ] || ! (cd "$top" && dpkg-checkbuilddeps) >/dev/null 2>&1; then
		builddeps=1
	fi
fi
# The lab's VM test nri-containerd runs sid's containerd 2.1 (the guest has
# no network): fetched into the cache once, by the user the tests run as
# (sudo's). Not fatal: without it that test is reported as skipped.
fetch_containerd() {
	local f=$top/tests/vm/fetch-debian-containerd
	if [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
		f="runuser -u $SUDO_USER -- $f"
	fi
	$f >/dev/null || echo "setup-deps: tests/vm/fetch-debian-containerd failed: the VM test nri-containerd will be skipped" >&2
}
if [ -z "$missing" ] && [ $builddeps = 0 ]; then
	[ $lab = 1 ] && fetch_containerd
	exit 0
fi

echo "setup-deps: installing:$missing$([ $builddeps = 1 ] && echo ' (and debian/control Build-Depends)')" >&2
if [ "$(id -u)" -ne 0 ]; then
	echo "setup-deps: not root; install these first:$missing$([ $builddeps = 1 ] && echo "; apt-get build-dep $top")" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
[ -z "$missing" ] || apt-get install -y -q --no-install-recommends $missing >/dev/null
if [ $builddeps = 1 ]; then
	apt-get build-dep -y -q --no-install-recommends "$top" >/dev/null
fi
[ $lab = 1 ] && fetch_containerd
exit 0
