#!/usr/bin/python3
"""Summarises a churn-bench directory into churn-bench.json: goal and measured side by side."""
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location("daemon_report", os.path.join(os.path.dirname(__file__), "daemon-report.py"))
dr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dr)


def main():
    d, kernel, hold, rate, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    with open(os.path.join(d, "handovers.jsonl")) as f:
        hs = [json.loads(line) for line in f if line.strip()]
    load = dr.latencies(d, "load", hs)
    before = json.load(open(os.path.join(d, "before.json")))
    cost = json.load(open(os.path.join(d, "cost.json")))
    peak = int(open(os.path.join(d, "rss_peak")).read()) if os.path.exists(os.path.join(d, "rss_peak")) else None
    hold_j = json.load(open(os.path.join(d, "hold.json")))
    load_j = json.load(open(os.path.join(d, "load.json")))
    cpu_s = cost["cpu_ticks"] / cost["clk_tck"]
    lat = load["exit_to_first_flush_ms"]
    res = {
        "kernel": kernel,
        "goal": {"tracked": hold, "removals_per_s": rate, "seconds": seconds, "missed": 0},
        "measured": {
            "tracked": before["tracked_before"], "held_created_s": hold_j.get("create_s"),
            "removals": load["removals"], "removals_per_s": load["achieved_rate"],
            "load_jobs": load_j.get("jobs", 1),
            "missed": load["handovers_missing"], "outcomes": load["outcomes"], "triggers": load["triggers"],
            "cpu_s": round(cpu_s, 2), "cpu_share": round(cpu_s / cost["wall_s"], 3) if cost["wall_s"] else None,
            "rss_before_bytes": before["rss_before"], "rss_peak_bytes": peak,
            "exit_to_first_flush_ms": {"p50": lat["median"], "p90": lat["p90"],
                                       "p99": lat["p99"], "max": lat["max"], "n": lat["n"]},
            "settle_s": cost["settle_s"],
        },
    }
    with open(os.path.join(d, "churn-bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    g, m = res["goal"], res["measured"]
    print(f"{'':24}{'goal':>12}{'measured':>14}")
    print(f"{'tracked at once':24}{g['tracked']:>12}{m['tracked']:>14}")
    print(f"{'removals per second':24}{g['removals_per_s']:>12}{m['removals_per_s']:>14}  ({m['load_jobs']} cgchurn loops)")
    print(f"{'removals':24}{int(g['removals_per_s'] * g['seconds']):>12}{m['removals']:>14}")
    print(f"{'missed':24}{g['missed']:>12}{m['missed']:>14}")
    print(f"outcomes {m['outcomes']}, triggers {m['triggers']}")
    print(f"wbguardd CPU {m['cpu_s']} s ({m['cpu_share']} of one CPU) over the churn; RSS {m['rss_before_bytes'] / 2**20:.1f} MiB "
          f"before, {(m['rss_peak_bytes'] or 0) / 2**20:.1f} MiB peak")
    l = m["exit_to_first_flush_ms"]
    if l["n"]:
        print(f"exit -> first flush: p50 {l['p50']:.1f} ms, p90 {l['p90']:.1f} ms, p99 {l['p99']:.1f} ms, max {l['max']:.1f} ms ({l['n']} flushed)")
    print(f"results: {os.path.join(d, 'churn-bench.json')}")


if __name__ == "__main__":
    sys.exit(main())
