# OCI helpers for VM tests: real bundles (busybox rootfs) run by Debian's
# crun and runc, and local image archives (no registry) for containerd.

# oci_rootfs DIR: a rootfs with busybox and its applets.
oci_rootfs() {
	local r=$1 a
	mkdir -p "$r/bin" "$r/data" "$r/proc" "$r/dev" "$r/sys"
	cp /bin/busybox "$r/bin/"
	for a in sh sleep dd sync cat echo ls; do ln -sf busybox "$r/bin/$a"; done
}

# oci_bundle DIR: a rootfs with busybox and its applets, and the runtime's
# default config.json.
oci_bundle() {
	oci_rootfs "$1/rootfs"
	(cd "$1" && rm -f config.json && crun spec)
}

# oci_image ROOTFS NAME CMD_JSON TAR: an OCI image archive of one layer
# (ROOTFS), its config (CMD_JSON the command, e.g. '["sh"]'), manifest and
# index, named NAME (as `ctr images import` takes it: io.containerd.image.name).
oci_image() {
	local root=$1 name=$2 cmd=$3 tar=$4 img layer config manifest
	img=$(mktemp -d /tmp/oci-image.XXXXXX)
	mkdir -p "$img/blobs/sha256"
	_oci_blob() { # FILE: its digest, the file moved into the blobs
		local d
		d=$(sha256sum "$1" | cut -d' ' -f1)
		mv "$1" "$img/blobs/sha256/$d"
		echo "$d"
	}
	_oci_size() { stat -c %s "$img/blobs/sha256/$1"; }
	tar -C "$root" -cf "$img/layer.tar" .
	layer=$(_oci_blob "$img/layer.tar")
	printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"config":{"Cmd":%s}}' \
		"$layer" "$cmd" >"$img/config.json"
	config=$(_oci_blob "$img/config.json")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$config" "$(_oci_size "$config")" "$layer" "$(_oci_size "$layer")" >"$img/manifest.json"
	manifest=$(_oci_blob "$img/manifest.json")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"%s","io.containerd.image.name":"%s"}}]}' \
		"$manifest" "$(_oci_size "$manifest")" "$name" "$name" >"$img/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$img/oci-layout"
	tar -C "$img" -cf "$tar" .
	rm -rf "$img"
}

# oci_pause_image NAME TAR: the pod sandbox's image, our own static pause
# program (tests/vm/pause.c, built here) alone in it.
oci_pause_image() {
	local r
	r=$(mktemp -d /tmp/oci-pause.XXXXXX)
	gcc -static -O2 -o "$r/pause" "$WBG_TOP/tests/vm/pause.c" || { rm -rf "$r"; return 1; }
	oci_image "$r" "$1" '["/pause"]' "$2"
	rm -rf "$r"
}

# oci_run RUNTIME BUNDLE ID CGROUP ANNOTATIONS_JSON DATA_DIR CMD: runs CMD
# (a shell command line) detached, with DATA_DIR at /data, in cgroup CGROUP
# (relative to the cgroupfs root).
oci_run() {
	local rt=$1 b=$2 id=$3 cg=$4 ann=$5 data=$6 cmd=$7
	mkdir -p "$data"
	jq --arg cg "/$cg" --argjson ann "$ann" --arg data "$data" --arg cmd "$cmd" '
		.process.args = ["sh", "-c", $cmd] | .process.terminal = false |
		.linux.cgroupsPath = $cg | .annotations = $ann |
		.mounts += [{"destination": "/data", "type": "bind", "source": $data, "options": ["rbind", "rw"]}]
	' "$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json"
	(cd "$b" && "$rt" run -d "$id" </dev/null >/dev/null 2>>/wbg-out/oci-errors.txt)
}

# oci_rm RUNTIME ID: kill and delete.
oci_rm() {
	"$1" kill "$2" KILL 2>/dev/null
	sleep 0.3
	"$1" delete -f "$2" 2>/dev/null
}
