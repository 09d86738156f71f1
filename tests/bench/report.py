#!/usr/bin/python3
"""Collects a bench directory into bench.json, a side-by-side table and lag.png.

bench DIR layout: DIR/columns ("name kernel mode mitigation fs" per line) and
DIR/<name>/run<i>/result.json (one wbstall result per run).
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def spread(values):
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def fmt(s, unit="", digits=1):
    if not s:
        return "-"
    m = f"{s['median']:.{digits}f}{unit}"
    if s["n"] > 1:
        m += f" ({s['min']:.{digits}f}-{s['max']:.{digits}f})"
    return m


def wrote(s):
    """The median share of its data the new writer wrote."""
    w = s.get("written_share")
    return f"{100 * w['median']:.0f}%" if w else "-"


def lag(s):
    """Worst lag; '>' when a run's writer still owed data at its deadline
    (the stall outlasted the run, so its lag is a lower bound)."""
    return (">" if s.get("unfinished_runs") else "") + fmt(s["worst_lag_s"], "", 2)


def old_handover(runs):
    """wbguardd's handover of the old cgroup, per run (wbguardd columns)."""
    hs = []
    for r in runs:
        for h in r.get("handovers", []):
            if h.get("cgroup", "").endswith("/old"):
                hs.append(h)
    if not hs:
        return None
    return {
        "outcomes": sorted(set(h["outcome"] for h in hs)),
        "first_flush_s": spread([h["first_flush_s"] for h in hs if "first_flush_s" in h]),
        "flushed_s": spread([h["flushed_s"] for h in hs if "flushed_s" in h]),
        "flushed_before_rmdir": sum(1 for h in hs if h.get("flushed_before_rmdir")),
        "cleanup_rerun": sum(1 for h in hs if h.get("cleanup_rerun")),
        "n": len(hs),
    }


def load_column(d, name, kernel, mode, mit, fs):
    runs, failed = [], 0
    cdir = os.path.join(d, name)
    skipped = os.path.join(cdir, "skipped")
    if os.path.exists(skipped):
        with open(skipped) as f:
            return {"name": name, "kernel": kernel, "mode": mode, "mitigation": mit, "fs": fs,
                    "skipped": f.read().strip() or "kernel not available"}
    for r in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
        p = os.path.join(cdir, r, "result.json")
        try:
            with open(p) as f:
                res = json.load(f)
            res["run"] = r
            hp = os.path.join(cdir, r, "handovers.jsonl")
            if os.path.exists(hp):
                with open(hp) as f:
                    res["handovers"] = [json.loads(line) for line in f if line.strip()]
            runs.append(res)
        except (OSError, ValueError):
            failed += 1
    wb = [r.get("cgroup_writeback_by_id", {}) for r in runs]
    summary = {
        "worst_lag_s": spread([r["new"]["worst_lag_s"] for r in runs]),
        "elapsed_s": spread([r["new"]["elapsed_s"] for r in runs]),
        "old_enoent": spread([w.get("old_target", {}).get("enoent", 0) for w in wb]),
        "old_ok": spread([w.get("old_target", {}).get("ok", 0) for w in wb]),
        "old_file_dirty_at_removal_bytes": spread([r["old"]["file_dirty_at_removal"] for r in runs]),
        "completed_runs": sum(1 for r in runs if r["new"]["completed"]),
        # the share of its data the new writer wrote; below 1 when it was
        # stopped at its deadline (a stall longer than the run allows)
        "written_share": spread([r["new"]["bytes_written"] / r["new"]["bytes_due"]
                                 for r in runs if r["new"].get("bytes_due")]),
        # runs whose new writer still owed data at its deadline
        "unfinished_runs": sum(1 for r in runs if not r["new"]["completed"]),
        "old_handover": old_handover(runs),
        "failed_runs": failed,
    }
    return {"name": name, "kernel": kernel, "mode": mode, "mitigation": mit, "fs": fs,
            "kernel_release": runs[0]["kernel"] if runs else None,
            "summary": summary, "runs": runs}


def ratios(cols):
    """Worst lag of each removed column over its control (same kernel, fs)."""
    out = []
    for c in cols:
        if c["mode"] != "removed" or not c["summary"]["worst_lag_s"]:
            continue
        for a in cols:
            if (a["mode"] == "alive" and a["kernel"] == c["kernel"] and a["fs"] == c["fs"]
                    and a["summary"]["worst_lag_s"]):
                num = c["summary"]["worst_lag_s"]["median"]
                den = max(a["summary"]["worst_lag_s"]["median"], 0.001)
                out.append({"column": c["name"], "control": a["name"], "worst_lag_ratio": round(num / den, 2)})
                break
    return out


# One colour per (mode, mitigation), the same in every panel.
STYLE = {
    ("alive", "none"): "#1f77b4",
    ("removed", "none"): "#d62728",
    ("removed", "wbguardd"): "#2ca02c",
    ("removed", "sync1"): "#ff7f0e",
    ("removed", "sync2"): "#9467bd",
}


def plot(d, cols):
    """One panel per (kernel, fs): each column's median run, lag per second."""
    groups = []
    for c in cols:
        key = (c["kernel"], c["fs"])
        if c["runs"] and key not in groups:
            groups.append(key)
    if not groups:
        return None
    png = os.path.join(d, "lag.png")
    ncols = 2 if len(groups) > 1 else 1
    nrows = (len(groups) + ncols - 1) // ncols
    script = [
        f"set terminal pngcairo size {700 * ncols},{380 * nrows} font ',10'",
        f"set output '{png}'",
        "set grid",
        "set key top left",
        "set xlabel 'seconds since the new writer started'",
        "set ylabel 'lag behind schedule (s)'",
        f"set multiplot layout {nrows},{ncols} title 'Replacement writer lag per second (median run of each column)'",
    ]
    for kernel, fs in groups:
        lines = []
        for c in cols:
            if (c["kernel"], c["fs"]) != (kernel, fs) or not c["runs"]:
                continue
            runs = sorted(c["runs"], key=lambda r: r["new"]["worst_lag_s"])
            median_run = runs[len(runs) // 2]
            dat = os.path.join(d, c["name"] + ".lag.dat")
            with open(dat, "w") as f:
                for i, v in enumerate(median_run["new"]["lag_per_sec"]):
                    f.write(f"{i} {v}\n")
            colour = STYLE.get((c["mode"], c["mitigation"]), "#7f7f7f")
            title = f"{c['mode']}" + ("" if c["mitigation"] == "none" else f" + {c['mitigation']}")
            lines.append(f"'{dat}' using 1:2 with lines lw 2 lc rgb '{colour}' title '{title}'")
        release = next((c["kernel_release"] for c in cols if c["kernel"] == kernel and c["kernel_release"]), kernel)
        script.append(f"set title '{kernel} ({release}), {fs}'")
        script.append("plot " + ", \\\n  ".join(lines))
    script.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(script).encode(), check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"report: gnuplot failed: {e}", file=sys.stderr)
        return None
    return png


def main():
    d = sys.argv[1]
    cols = []
    with open(os.path.join(d, "columns")) as f:
        for line in f:
            name, kernel, mode, mit, fs = line.split()
            cols.append(load_column(d, name, kernel, mode, mit, fs))
    result = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "columns": cols,
        "ratios": ratios([c for c in cols if "skipped" not in c]),
    }
    png = plot(d, [c for c in cols if "skipped" not in c])
    if png:
        result["plot"] = png
    with open(os.path.join(d, "bench.json"), "w") as f:
        json.dump(result, f, indent=1)

    hdr = f"{'column':34} {'kernel':18} {'worst lag s':>22} {'old -ENOENT':>24} {'old ok':>10} {'append s':>20} {'wrote':>6} {'runs':>5}"
    print(hdr)
    print("-" * len(hdr))
    for c in cols:
        if "skipped" in c:
            print(f"{c['name']:34} skipped: {c['skipped']}")
            continue
        s = c["summary"]
        ok_runs = len(c["runs"])
        print(f"{c['name']:34} {str(c['kernel_release']):18} {lag(s):>22} "
              f"{fmt(s['old_enoent'], '', 0):>24} {fmt(s['old_ok'], '', 0):>10} "
              f"{fmt(s['elapsed_s'], '', 1):>20} {wrote(s):>6} {ok_runs:>2}/{ok_runs + s['failed_runs']}")
    for r in result["ratios"]:
        print(f"worst lag {r['column']} / {r['control']}: {r['worst_lag_ratio']}x")
    print(f"results: {os.path.join(d, 'bench.json')}" + (f"  plot: {png}" if png else ""))
    return 1 if any(c.get("summary", {}).get("failed_runs") for c in cols) else 0


if __name__ == "__main__":
    sys.exit(main())
