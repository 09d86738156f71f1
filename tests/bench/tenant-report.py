#!/usr/bin/env python3
"""tenant-report OUT KERNEL EMPTIES MANY CHURN: tenant-bench's guest output
as one JSON document (OUT/result.json, also printed), quiet and hostile side
by side, with issue 23's goals and whether each was met."""
import json
import os
import sys

out, kernel, empties, many, churn = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


def load(name, default=None):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def samples(name):
    """Microsecond samples as milliseconds; failures counted apart."""
    try:
        lines = open(os.path.join(out, name)).read().split()
    except OSError:
        return {"n": 0}
    ok = sorted(int(x) / 1000 for x in lines if x.isdigit())
    fail = sum(1 for x in lines if not x.isdigit())

    def pct(p):
        return round(ok[min(len(ok) - 1, int(p / 100 * len(ok)))], 1) if ok else None

    return {"n": len(ok), "failed": fail, "p50_ms": pct(50), "p99_ms": pct(99), "max_ms": round(ok[-1], 1) if ok else None}


def stall(phase):
    j = load(phase + "-stall.json")
    if not j:
        return None
    return {
        "old_dirty_at_removal_bytes": j["old"]["file_dirty_at_removal"],
        "worst_lag_s": j["new"]["worst_lag_s"],
        "append_s": j["new"]["elapsed_s"],
        "enoent": j.get("cgroup_writeback_by_id", {}).get("old_target", {}).get("enoent", 0),
    }


def metric(name):
    try:
        for line in open(os.path.join(out, "metrics.txt")):
            if line.startswith(name + " "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def cost(phase):
    c = load(phase + "-cost.json", {})
    tck = c.get("clk_tck", 100)
    wall = float(c.get("wall_s", 0) or 0)
    cpu = c.get("cpu_ticks", 0) / tck
    return {"rss_bytes": c.get("rss"), "cpu_s": round(cpu, 2), "wall_s": round(wall, 1),
            "cpu_share": round(cpu / wall, 3) if wall else None}


loads = {}
for m in ("empties", "churn", "many", "fs8", "conns"):
    loads.update(load("load-" + m + ".json", {m: None}))
try:
    rss_peak = int(open(os.path.join(out, "rss_peak")).read())
except (OSError, ValueError):
    rss_peak = None

res = {
    "bench": "tenant-bench",
    "command": "tests/bench/tenant-bench --empties %d --many %d --churn %d --kernel %s" % (empties, many, churn, kernel),
    "kernel": kernel,
    "registered": load("registered.json", {}).get("registered"),
    "register_createRuntime": samples("register-us.txt"),
    "tenant_achieved": loads,
    "quiet": {
        "hook_createRuntime": samples("quiet-create-us.txt"),
        "hook_poststop": samples("quiet-poststop-us.txt"),
        "ping": samples("quiet-ping-us.txt"),
        "http_livez": samples("quiet-livez-us.txt"),
        "http_readyz": samples("quiet-readyz-us.txt"),
        "loop_livez": samples("quiet-loop-livez-us.txt"),
        "kubelet_livez": samples("quiet-kubelet-livez-us.txt"),
        "kubelet_readyz": samples("quiet-kubelet-readyz-us.txt"),
        "cost": cost("quiet"),
        "replacement": stall("quiet"),
    },
    "hostile": {
        "hook_createRuntime": samples("hostile-create-us.txt"),
        "hook_poststop": samples("hostile-poststop-us.txt"),
        "ping": samples("hostile-ping-us.txt"),
        "http_livez": samples("hostile-livez-us.txt"),
        "http_readyz": samples("hostile-readyz-us.txt"),
        "loop_livez": samples("hostile-loop-livez-us.txt"),
        "kubelet_livez": samples("hostile-kubelet-livez-us.txt"),
        "kubelet_readyz": samples("hostile-kubelet-readyz-us.txt"),
        "cost": dict(cost("hostile"), rss_peak_bytes=rss_peak),
        "replacement": stall("hostile"),
    },
    "unguarded_replacement": stall("unguarded"),
    "second_daemon": load("second.json", {}),
    "refusals": {
        "cgroups_refused_tenant": metric('wbguard_cgroups_refused_total{reason="max_cgroups_per_tenant"}'),
        "cgroups_refused_node": metric('wbguard_cgroups_refused_total{reason="max_cgroups"}'),
        "cgroups_refused_pool": metric('wbguard_cgroups_refused_total{reason="tenant_pool"}'),
        "inode_records_tenant_share": metric('wbguard_bpf_inode_records_refused_total{reason="tenant_share"}'),
        "inode_records_tenant_pool": metric('wbguard_bpf_inode_records_refused_total{reason="tenant_pool"}'),
        "inode_records_untracked": metric('wbguard_bpf_inode_records_refused_total{reason="untracked"}'),
        "watch_tenant_full": metric("wbguard_dying_watch_tenant_full_total"),
        "watch_pool_full": metric("wbguard_dying_watch_pool_full_total"),
        "stall_tenant_capped": metric('wbguard_stall_reports_total{result="tenant_capped"}'),
        "probe_refused": metric("wbguard_probe_refused_total"),
        "probe_answers": metric("wbguard_probe_answers_total"),
        "evidence_capped": metric("wbguard_dying_evidence_capped_total"),
        "http_deadline_closes": metric("wbguard_http_deadline_closes_total"),
        "http_user_share_closes": metric("wbguard_http_user_share_closes_total"),
        "tracked_cgroups": metric("wbguard_tracked_cgroups"),
    },
}
h = res["hostile"]
u = res["unguarded_replacement"] or {}
q = res["quiet"]


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


# Under TCG a process's exec alone takes about a tenth of a second, so the
# quiet figures are the floor: the ratios say what the tenant added.
res["hostile_over_quiet"] = {
    k + "_" + p: ratio(h[k].get(p + "_ms"), q[k].get(p + "_ms"))
    for k in ("hook_createRuntime", "hook_poststop", "ping", "http_livez", "http_readyz", "loop_livez",
              "kubelet_livez", "kubelet_readyz")
    for p in ("p50", "p99", "max")
}


def lag_hist(name):
    """wbguard_event_loop_lag_seconds's cumulative buckets in a scrape."""
    b = {}
    try:
        for line in open(os.path.join(out, name)):
            if line.startswith("wbguard_event_loop_lag_seconds_bucket{le="):
                le = line.split('"')[1]
                b[le] = float(line.split()[1])
    except OSError:
        return None
    return b


def lag_summary(b):
    if not b:
        return None
    total = b.get("+Inf", 0)
    over = {le: round(total - n) for le, n in b.items() if le in ("0.05", "0.1", "1")}
    return {"timers": round(total), "later_than_s": over}


qh, ah = lag_hist("quiet-metrics.txt"), lag_hist("metrics.txt")
res["event_loop_lag"] = {
    "quiet": lag_summary(qh),
    "hostile": lag_summary({k: v - (qh or {}).get(k, 0) for k, v in ah.items()} if ah else None),
}
goal = {
    "hook p99 < 50 ms": [h["hook_createRuntime"].get("p99_ms"), h["hook_poststop"].get("p99_ms")],
    "hook max < 1 s": [h["hook_createRuntime"].get("max_ms"), h["hook_poststop"].get("max_ms")],
    "liveness (ping) always < 1 s": [h["ping"].get("max_ms"), h["ping"].get("failed")],
    "probes (/livez, /readyz) always < 1 s": [h["kubelet_livez"].get("max_ms"), h["kubelet_readyz"].get("max_ms"),
                                                h["kubelet_livez"].get("failed"), h["kubelet_readyz"].get("failed")],
    "a second wbguardd exits 3, the sysctl as it was": [res["second_daemon"].get("exit"),
                                                        res["second_daemon"].get("sysctl_before"),
                                                        res["second_daemon"].get("sysctl_after")],
    "RSS under the DaemonSet's request (32 MiB)": rss_peak,
    "replacement: -ENOENT under a quarter of unguarded": [(h["replacement"] or {}).get("enoent"), u.get("enoent")],
}
met = {}
vals = goal["hook p99 < 50 ms"]
met["hook p99 < 50 ms"] = all(v is not None and v < 50 for v in vals)
vals = goal["hook max < 1 s"]
met["hook max < 1 s"] = all(v is not None and v < 1000 for v in vals)
met["liveness (ping) always < 1 s"] = h["ping"].get("max_ms") is not None and h["ping"]["max_ms"] < 1000 and not h["ping"].get("failed")
lv, rd = h["kubelet_livez"], h["kubelet_readyz"]
met["probes (/livez, /readyz) always < 1 s"] = all(
    x.get("max_ms") is not None and x["max_ms"] < 1000 and not x.get("failed") for x in (lv, rd))
sd = res["second_daemon"]
met["a second wbguardd exits 3, the sysctl as it was"] = sd.get("exit") == 3 and sd.get("sysctl_before") == sd.get(
    "sysctl_after") and sd.get("first_still_answers") is True
met["RSS under the DaemonSet's request (32 MiB)"] = rss_peak is not None and rss_peak < 32 << 20
e, ue = goal["replacement: -ENOENT under a quarter of unguarded"]
met["replacement: -ENOENT under a quarter of unguarded"] = e is not None and bool(ue) and e * 4 < ue
res["goals"] = {k: {"measured": goal[k], "met": met[k]} for k in goal}
with open(os.path.join(out, "result.json"), "w") as f:
    json.dump(res, f, indent=2)
print(json.dumps(res, indent=2))
