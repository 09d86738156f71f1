#!/usr/bin/python3
"""The PrometheusRule carries the same groups as the plain rules file, and
every wbguard_ metric the rules and the Grafana dashboard query is one that
wbguardd writes (a name in its sources; histograms with _bucket/_sum/_count),
and every BPF program they name by its label is one the BPF object has."""
import glob
import json
import os
import re
import sys

import yaml

top = os.path.normpath(os.path.join(os.path.dirname(__file__), "../.."))
rules = yaml.safe_load(open(os.path.join(top, "units/prometheus/wbguard-rules.yml")))
prule = yaml.safe_load(open(os.path.join(top, "units/kubernetes/components/prometheus-operator/prometheusrule.yaml")))
problems = []
if prule.get("kind") != "PrometheusRule" or prule["spec"]["groups"] != rules["groups"]:
    problems.append("the PrometheusRule: spec.groups differ from units/prometheus/wbguard-rules.yml")

exported = set()
for f in glob.glob(os.path.join(top, "daemon/**/*.c"), recursive=True):
    exported |= set(re.findall(r'"(wbguard_[a-z0-9_]+)', open(f).read()))

def used(expr):
    return set(re.findall(r"\b(wbguard_[a-z0-9_]+)", expr))

def known(name):
    return name in exported or re.sub(r"_(bucket|sum|count)$", "", name) in exported

exprs = [("rules", r["alert"], r["expr"]) for g in rules["groups"] for r in g["rules"]]
dash = json.load(open(os.path.join(top, "units/grafana/wbguard-dashboard.json")))
for p in dash["panels"]:
    for t in p.get("targets", []):
        exprs.append(("dashboard", p["title"], t["expr"]))
for where, what, e in exprs:
    for n in sorted(used(e)):
        if not known(n):
            problems.append(f"{where}: '{what}' queries {n}, which wbguardd does not export")
# A program the rules or the dashboard name by its label is one the BPF
# object has (a renamed program would leave its alert silent for good).
progs = set()
for f in glob.glob(os.path.join(top, "daemon/bpf/*.bpf.c")):
    src = open(f).read()
    progs |= set(re.findall(r'SEC\("[^"]+"\)\s*\nint BPF_PROG\((\w+)', src))
    progs |= set(re.findall(r'SEC\("[^"]+"\)\s*\nint (\w+)\(', src))
for where, what, e in exprs:
    for alts in re.findall(r'program=~?"([^"]+)"', e):
        for n in alts.split("|"):
            if n not in progs:
                problems.append(f"{where}: '{what}' names BPF program {n}, which no daemon/bpf/*.bpf.c has")
# Every alert names its runbook, and the runbook has that section.
runbooks = open(os.path.join(top, "docs/runbooks.md")).read()
anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^## (.+)$", runbooks, re.M)}
for g in rules["groups"]:
    for r in g["rules"]:
        url = r.get("annotations", {}).get("runbook_url", "")
        m = re.match(r"/usr/share/doc/wbguard/runbooks.md#(.+)$", url)
        if not m:
            problems.append(f"rules: '{r['alert']}' has no runbook_url into docs/runbooks.md")
        elif m.group(1) not in anchors:
            problems.append(f"rules: '{r['alert']}' runbook_url #{m.group(1)}: no such section in docs/runbooks.md")
# Every alert keeps instance (the node's name under the ServiceMonitor),
# which the runbooks find the node's pod by: no aggregation drops it.
for g in rules["groups"]:
    for r in g["rules"]:
        for by in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", r.get("expr", "")):
            if "without" in r["expr"] or "instance" not in [x.strip() for x in by.split(",")]:
                problems.append(f"rules: '{r['alert']}' aggregates instance away ({by})")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
