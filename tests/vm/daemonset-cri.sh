# Sourced by tests/vm/tests/nri-containerd.sh, in its guest, with its
# containerd 2.1 running and `cri` defined (the guest and containerd's start
# shared): units/kubernetes/daemonset.yaml's wbguardd container started
# through the CRI as the kubelet starts it (tests/vm/pod-to-cri: its host
# namespaces, capabilities, read-only root, no_new_privs, seccomp
# RuntimeDefault, which is containerd's own profile, and its volumes), with
# NRI only and wbguardd's defaults (no hook, no flush mode), the pods in the
# kubelet's cgroupfs layout (kubepods/burstable/pod<uid>/<container>).
#  f. it runs under that profile and those capabilities, its probes answer,
#     NRI connects, and it may open files by handle;
#  g. a workload pod under a pod-level memory limit whose container is
#     restarted in place (stop, remove, create in the same sandbox, as the
#     kubelet does after a crash) appending to the same hostPath files: the
#     replacement's worst lag is within the never-removed control's (the
#     same appends by a second container beside a first one kept alive),
#     and the removed container's record carries its pod's names;
#  h. a pod with a wbguard.io/dirty-expire annotation is written back by
#     its own inodes while a neighbour rewrites its file: no syncfs.
ds_admin=$(cat /proc/sys/vm/dirty_expire_centisecs)
. "$WBG_TOP/tests/vm/kube-pods.sh"
# the admin lets the logger pod ask for its own expiry; nothing else added
t=$(cut -d' ' -f1 /proc/uptime)
ds_start '[policy "kubepods/burstable/pod-uid-logger/*"]
allow_annotation = yes'
check "f. the DaemonSet's pod runs through the CRI (RunPodSandbox, CreateContainer, StartContainer)" test -n "$dspod"
echo "# the DaemonSet's wbguardd watching $(since "$t") s after RunPodSandbox"
grep -E '^(Seccomp|CapEff|NoNewPrivs):' /proc/${dspid:-0}/status 2>/dev/null | sed 's/^/# wbguardd in the pod: /'
want=$(python3 -c "
import yaml
d = [x for x in yaml.safe_load_all(open('$ds_manifest')) if x and x['kind'] == 'DaemonSet'][0]
c = [c for c in d['spec']['template']['spec']['containers'] if c['name'] == 'wbguardd'][0]
print(','.join(sorted('cap_' + x.lower() for x in c['securityContext']['capabilities']['add'])))")
have=$(capsh --decode="$(awk '$1 == "CapEff:" {print $2}' /proc/${dspid:-0}/status 2>/dev/null)" 2>/dev/null | sed 's/^.*=//' | tr ',' '\n' | sort | paste -sd,)
check "f. wbguardd in the pod: under a seccomp filter (RuntimeDefault) with no_new_privs" \
	sh -c "grep -q '^Seccomp:[[:space:]]*2' /proc/${dspid:-0}/status && grep -q '^NoNewPrivs:[[:space:]]*1' /proc/${dspid:-0}/status"
check "f. wbguardd in the pod: exactly the manifest's capabilities ($want; has ${have:-none})" test "$have" = "$want"
[ "$(curl -sf --max-time 2 http://127.0.0.1:9575/livez)" = ok ] && [ "$(curl -sf --max-time 2 http://127.0.0.1:9575/readyz)" = ok ]
check "f. the kubelet's probes answer (/livez, /readyz on the probes' listener)" test $? = 0
i=0
while ! curl -sf http://127.0.0.1:9573/metrics 2>/dev/null | grep -q '^wbguard_nri_connected 1' && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
scrape_metrics
cp /wbg-out/metrics.txt /wbg-out/ds-metrics-start.txt
check "f. NRI connected from the pod (wbguard_nri_connected 1)" test "$(metric wbguard_nri_connected)" = 1
check "f. open by handle allowed under RuntimeDefault with CAP_DAC_READ_SEARCH (wbguard_flush_inode_handles_available 1)" \
	test "$(metric wbguard_flush_inode_handles_available)" = 1
check "f. its BPF programs attached in the pod" grep -q '^wbguard_bpf_program_attached{.*} 1$' /wbg-out/metrics.txt

W="$WBG_BUILD/tests/wbstall --here --no-bpf --dir /data --files 200 --rate 16"

# g. the control: app writes 4 s worth and stays (its cgroup alive); app2,
# beside it, appends 12 s worth to the same files
kpod ctl
kctr ctl app 0 "trap 'exit 0' TERM; $W --new-secs 4 --json /out/old.json && { sleep 3600 & wait; }"
kctr ctl app2 0 "$W --new-secs 12 --json /out/new.json"
ids=$(cri run /tmp/pods/ctl.json /tmp/pods/ctl-app-0.json 2>>/wbg-out/cri-errors.txt)
ctlpod=${ids% *}
awaitf /tmp/out-ctl/old.json
cri add "$ctlpod" /tmp/pods/ctl-app2-0.json /tmp/pods/ctl.json >/dev/null 2>>/wbg-out/cri-errors.txt
awaitf /tmp/out-ctl/new.json
lag_ctl=$(jq .new.worst_lag_s /tmp/out-ctl/new.json 2>/dev/null)
cri down "$ctlpod" 2>>/wbg-out/cri-errors.txt
# the restart: app writes 4 s worth and exits; the kubelet restarts it in
# place and the replacement appends 12 s worth
scrape_metrics
e0=$(metric 'wbguard_kernel_foreign_flushes_total{result="enoent",target="dying"}')
kpod db
kctr db app 0 "$W --new-secs 4 --json /out/old.json"
kctr db app 1 "$W --new-secs 12 --json /out/new.json"
ids=$(cri run /tmp/pods/db.json /tmp/pods/db-app-0.json 2>>/wbg-out/cri-errors.txt)
dbpod=${ids% *} dbctr0=${ids#* }
awaitf /tmp/out-db/old.json
sleep 1
dbctr1=$(cri restart "$dbpod" "$dbctr0" /tmp/pods/db-app-1.json /tmp/pods/db.json 2>>/wbg-out/cri-errors.txt)
awaitf /tmp/out-db/new.json
lag_db=$(jq .new.worst_lag_s /tmp/out-db/new.json 2>/dev/null)
scrape_metrics
e1=$(metric 'wbguard_kernel_foreign_flushes_total{result="enoent",target="dying"}')
cp /tmp/out-db/new.json /wbg-out/restart-new.json; cp /tmp/out-ctl/new.json /wbg-out/control-new.json
echo "# g. worst lag: restarted in place ${lag_db:-?} s, never-removed control ${lag_ctl:-?} s; -ENOENT to dying wbs during the restart: $(awk -v a="${e0:-0}" -v b="${e1:-0}" 'BEGIN {print b - a}')"
check "g. the container restarted in place through the CRI (stop, remove, create, start)" sh -c "[ -n '$dbctr1' ] && [ -n '$lag_db' ] && [ -n '$lag_ctl' ]"
check "g. the replacement's worst lag (${lag_db:-?} s) is within the never-removed control's (${lag_ctl:-?} s, + 1 s)" \
	awk -v a="${lag_db:-999}" -v b="${lag_ctl:-0}" 'BEGIN {exit !(a <= b + 1)}'
cri down "$dbpod" 2>>/wbg-out/cri-errors.txt

# h. the logger (256 KiB a second, a 2 s expiry asked by annotation)
# beside a neighbour on the node rewriting 16 MiB of its file
kpod logger '{"wbguard.io/dirty-expire": "2s"}'
kctr logger app 0 "trap 'exit 0' TERM; while :; do dd if=/dev/zero bs=64k count=4 2>/dev/null >>/data/log; sleep 1; done"
dd if=/dev/zero of=/mnt/ext4/neighbour bs=1M count=16 status=none && sync
scrape_metrics
sf0=$(awk '$1 ~ /^wbguard_flush_target_syncfs_total/ {n += $2} END {print n + 0}' /wbg-out/metrics.txt)
wb0=$(metric wbguard_expiry_writebacks_total)
ids=$(cri run /tmp/pods/logger.json /tmp/pods/logger-app-0.json 2>>/wbg-out/cri-errors.txt)
lgpod=${ids% *}
end=$(($(date +%s) + 10))
while [ "$(date +%s)" -lt $end ]; do dd if=/dev/zero of=/mnt/ext4/neighbour bs=1M count=16 conv=notrunc status=none; sleep 0.5; done
scrape_metrics
cp /wbg-out/metrics.txt /wbg-out/ds-metrics-logger.txt
sf1=$(awk '$1 ~ /^wbguard_flush_target_syncfs_total/ {n += $2} END {print n + 0}' /wbg-out/metrics.txt)
wb1=$(metric wbguard_expiry_writebacks_total)
echo "# h. logger: expiry writebacks ${wb0:-?} -> ${wb1:-?}, syncfs ${sf0:-?} -> ${sf1:-?}, handle fallbacks $(metric wbguard_flush_handle_fallbacks_total)"
grep 'pod-uid-logger.*dirty expiry' $dslog | head -1 | sed 's/^/# /'
check "h. the logger's annotation taken from NRI and its data written back by the expiry" \
	awk -v a="${wb0:-0}" -v b="${wb1:-0}" 'BEGIN {exit !(b - a >= 2)}'
check "h. ... by its own inodes: no syncfs of the neighbours' filesystem, no handle fallback" \
	sh -c "[ '${sf1:-x}' = '${sf0:-y}' ] && [ '$(metric wbguard_flush_handle_fallbacks_total)' = 0 ]"
cri down "$lgpod" 2>>/wbg-out/cri-errors.txt

# g's record: its watch ends when the kernel has moved the removed
# container's inodes off its dying wb (its record then says "moved"), which
# can take a drain_after_sec (60 s) after its writer stopped dirtying them
await_record "\"cgroup\":\"kubepods/burstable/pod-uid-db/$dbctr0\"" 900
rec=$(grep "\"cgroup\":\"kubepods/burstable/pod-uid-db/$dbctr0\"" /run/wbguard/handovers.jsonl | tail -1)
echo "# g. app's first container: $rec" | cut -c1-600
check "g. the removed container's record: pod db, namespace shop, container app (from NRI)" \
	test "$(echo "$rec" | jq -r '"\(.namespace)/\(.pod)/\(.container)"' 2>/dev/null)" = "shop/db/app"
check "g. ... its watch ended when the kernel had moved its inodes to a live wb ($(echo "$rec" | jq -r .watch_ended 2>/dev/null))" \
	test "$(echo "$rec" | jq -r .watch_ended 2>/dev/null)" = moved

# the DaemonSet's pod stopped as the kubelet stops it: SIGTERM, the sysctl
# restored
cri down "$dspod" 2>>/wbg-out/cri-errors.txt
cp $dslog /wbg-out/ds-wbguardd.log 2>/dev/null
check "the DaemonSet's pod stopped through the CRI; vm.dirty_expire_centisecs back to the admin's ($ds_admin)" \
	test "$(cat /proc/sys/vm/dirty_expire_centisecs)" = "$ds_admin"
