# Sourced by VM jobs (after lib.sh and oci.sh) that drive sid's containerd
# 2.1 through its CRI, with NRI on (tests/vm/tests/nri-containerd.sh,
# tests/bench/restart-bench): its tree, its configuration, its start and the
# two local images. cri-client calls and Python starts cost seconds under
# TCG: callers make few.
cache=${WBGUARD_CACHE:-$HOME/.cache/wbguard}
tree=$cache/containerd-sid
sock=/run/containerd-wbg/containerd.sock
cri() { "$WBG_TOP/tests/vm/cri-client" --endpoint "unix://$sock" "$@"; }
cctr() { "$tree/usr/bin/ctr" --address "$sock" "$@"; }
# containerd_missing: prints why this guest cannot run it (nothing: it can)
containerd_missing() {
	local py=/usr/lib/python3/dist-packages
	if [ ! -s "$tree/.packages" ] || [ ! -x "$tree/usr/bin/containerd" ]; then
		echo "sid's containerd 2.1 not fetched into $tree (run tests/vm/fetch-debian-containerd on the host: tests/setup-deps.sh --lab does)"
	elif [ ! -d $py/grpc ] || [ ! -d $py/grpc_tools ] || [ ! -d $py/google/protobuf ]; then
		echo "python3-grpcio, python3-grpc-tools or python3-protobuf not installed (tests/setup-deps.sh --lab installs them)"
	fi
}
# containerd_config: /tmp/containerd.toml, with the runc this guest can run.
# containerd 2.1 on the guest's overlay root: the native snapshotter
# (overlay on overlay is refused), its own root and state, the CRI with our
# pause image as the sandbox image, images unpacked (ctr's import goes
# through the transfer service) for the native snapshotter, cgroupfs (SystemdCgroup = false), and
# NRI on its default socket. No CNI configuration: host-network pods need
# none (containerd logs that it found none and goes on).
containerd_config() {
	# sid's runc is built against glibc 2.38 (__isoc23_strtol): on an older
	# host (Debian 12's 2.36) the host's own runc it is.
	runc=$tree/usr/sbin/runc
	"$runc" --version >/dev/null 2>&1 || runc=$(command -v runc)
cat >/tmp/containerd.toml <<EOF
version = 3
root = "/var/lib/containerd-wbg"
state = "/run/containerd-wbg"
[grpc]
  address = "$sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "native"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "localhost/wbg-pause:1"
[plugins.'io.containerd.transfer.v1.local']
  [[plugins.'io.containerd.transfer.v1.local'.unpack_config]]
    platform = "linux/amd64"
    snapshotter = "native"
[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/tmp/cni/bin"]
    conf_dir = "/tmp/cni/net.d"
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  disable_connections = false
  socket_path = "/var/run/nri/nri.sock"
  plugin_path = "/tmp/nri/plugins"
  plugin_config_path = "/tmp/nri/conf.d"
  plugin_registration_timeout = "5s"
  plugin_request_timeout = "2s"
EOF
}
# sid's shim (containerd-shim-runc-v2) before the host's, found in PATH
containerd_start() {
	PATH=$tree/usr/bin:$PATH "$tree/usr/bin/containerd" --config /tmp/containerd.toml >>/wbg-out/containerd.log 2>&1 &
	cd_pid=$!
	i=0
	while ! cri version >/dev/null 2>&1 && [ $i -lt 60 ]; do
		kill -0 $cd_pid 2>/dev/null || break
		sleep 0.5
		i=$((i + 1))
	done
}
# containerd_images: the images (no registry), in the CRI's namespace: our
# pause, busybox; the CRI's list of them in /wbg-out/cri-images.txt
containerd_images() {
	local i
	oci_pause_image localhost/wbg-pause:1 /tmp/pause.tar
	oci_rootfs /tmp/bbroot
	oci_image /tmp/bbroot localhost/wbg-busybox:1 '["sh"]' /tmp/busybox.tar
	for i in pause busybox; do
		cctr -n k8s.io images import --snapshotter native /tmp/$i.tar >>/wbg-out/ctr-import.log 2>&1
	done
	# the CRI learns of them from containerd's events (each cri-client call
	# takes seconds under TCG: few of them)
	i=0
	while cri images >/wbg-out/cri-images.txt 2>&1 && [ "$(grep -c 'localhost/wbg-\(pause\|busybox\):1' /wbg-out/cri-images.txt)" -lt 2 ] && [ $i -lt 5 ]; do
		sleep 1
		i=$((i + 1))
	done
}
