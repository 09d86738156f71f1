#!/bin/sh
# Installs every build, test and benchmark dependency from Debian's packages.
# Idempotent: only missing packages are installed, and apt's lists are only
# refreshed when something is missing.
set -eu

PKGS="
meson ninja-build gcc clang llvm pkg-config clang-tidy cppcheck
bpftool libbpf-dev libelf-dev zlib1g-dev
libsystemd-dev libinih-dev libnl-3-dev
libjson-c-dev libmicrohttpd-dev libyaml-dev libcrypt-dev libgnutls28-dev
apache2-utils openssl
qemu-system-x86 qemu-utils busybox-static cpio kmod e2fsprogs xfsprogs fdisk lvm2
bpftrace gnuplot-nox jq crun runc dbus systemd fio inotify-tools python3 python3-yaml curl prometheus prometheus-node-exporter
strace valgrind libcgroup-dev
scdoc man-db libdbus-1-dev bash-completion
dpkg-dev debhelper lintian fakeroot
podman buildah containerd mmdebstrap
postgresql-15
"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "setup-deps: installing:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	echo "setup-deps: not root; install these packages first:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
