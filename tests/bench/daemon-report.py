#!/usr/bin/python3
"""Summarises a daemon-bench directory into daemon-bench.json and a table."""
import json
import os
import statistics
import sys


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    k = min(len(v) - 1, max(0, int(round(p / 100 * (len(v) - 1)))))
    return v[k]


def latencies(d, phase, handovers):
    with open(os.path.join(d, phase + ".json")) as f:
        churn = json.load(f)
    by_cg = {h["cgroup"]: h for h in handovers}
    lat, missing, outcomes, triggers = [], 0, {}, {}
    for e in churn["exits"]:
        h = by_cg.get(e["cgroup"])
        if not h:
            missing += 1
            continue
        outcomes[h["outcome"]] = outcomes.get(h["outcome"], 0) + 1
        triggers[h["trigger"]] = triggers.get(h["trigger"], 0) + 1
        if "first_flush_s" in h:
            lat.append((h["trigger_monotonic_us"] + h["first_flush_s"] * 1e6 - e["exit_us"]) / 1000.0)
    return {
        "removals": len(churn["exits"]), "rate": churn["rate"], "errors": churn["errors"],
        "achieved_rate": round(len(churn["exits"]) / churn["elapsed_s"], 1) if churn["elapsed_s"] else None,
        "handovers_missing": missing, "outcomes": outcomes, "triggers": triggers,
        "exit_to_first_flush_ms": {"median": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99), "max": max(lat) if lat else None,
                                   "n": len(lat)},
    }


def main():
    d, kernel, inode_flush = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.path.join(d, "handovers.jsonl")) as f:
        hs = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(d, "idle_cost.json")) as f:
        cost = json.load(f)
    with open(os.path.join(d, "hold.json")) as f:
        hold = json.load(f)
    rss = int(open(os.path.join(d, "rss_bytes")).read())
    old = [h for h in hs if h["cgroup"] == "old"]
    # wbguardd flushes at the exit, before anyone could read memory.stat:
    # its own reading at the trigger is the one that counts.
    old_dirty = old[0].get("dirty_bytes", 0) if old else 0
    res = {
        "kernel": kernel,
        "inode_flush": inode_flush,
        "idle": latencies(d, "idle", hs),
        "load": latencies(d, "load", hs),
        "tracked": {"cgroups_held": hold["held"], "rss_bytes": rss,
                    "idle_cpu_s_per_min": round(cost["cpu_ticks"] / cost["clk_tck"] * 60 / cost["seconds"], 3),
                    "idle_wakeups_per_min": round(cost["wakeups"] * 60 / cost["seconds"], 1),
                    "threads": cost["threads"]},
        "neighbour": {"old_file_dirty_bytes": old_dirty, "handover": old[0] if old else None},
    }
    if old and old_dirty:
        res["neighbour"]["device_bytes_over_file_dirty"] = round(old[0]["device_bytes"] / old_dirty, 3)
    with open(os.path.join(d, "daemon-bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    for ph in ("idle", "load"):
        p = res[ph]
        l = p["exit_to_first_flush_ms"]
        print(f"{ph:5} {p['removals']} removals at {p['achieved_rate']}/s (asked {p['rate']}): exit -> first flush "
              f"median {l['median']:.1f} ms, p99 {l['p99']:.1f} ms, max {l['max']:.1f} ms; "
              f"handovers missing {p['handovers_missing']}; outcomes {p['outcomes']}; triggers {p['triggers']}")
    t = res["tracked"]
    print(f"tracked {t['cgroups_held']} cgroups: RSS {t['rss_bytes'] / 2**20:.1f} MiB; idle CPU "
          f"{t['idle_cpu_s_per_min']} s/min; wakeups {t['idle_wakeups_per_min']}/min ({t['threads']} threads)")
    n = res["neighbour"]
    if n["handover"]:
        h = n["handover"]
        print(f"neighbour: old file_dirty {old_dirty} B, flush wrote {h['device_bytes']} B "
              f"({n.get('device_bytes_over_file_dirty')}x); targets {h.get('target_list')}")
    print(f"results: {os.path.join(d, 'daemon-bench.json')}")


if __name__ == "__main__":
    sys.exit(main())
