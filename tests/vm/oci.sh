# OCI helpers for VM tests: real bundles (busybox rootfs) run by Debian's
# crun and runc.

# oci_bundle DIR: a rootfs with busybox and its applets, and the runtime's
# default config.json.
oci_bundle() {
	local b=$1 a
	mkdir -p "$b/rootfs/bin" "$b/rootfs/data" "$b/rootfs/proc" "$b/rootfs/dev" "$b/rootfs/sys"
	cp /bin/busybox "$b/rootfs/bin/"
	for a in sh sleep dd sync cat echo ls; do ln -sf busybox "$b/rootfs/bin/$a"; done
	(cd "$b" && rm -f config.json && crun spec)
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
