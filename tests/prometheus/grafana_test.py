#!/usr/bin/env python3
"""deploy/grafana/sluice.json names only metrics Sluice defines (ctest `grafana_dashboard_metrics`).

Without a running platform: every `sluice_*` name in a panel's PromQL must be a metric family
registered in src/runtime (AddCounter / AddGauge / AddHistogram with a literal name; a histogram
also gives NAME_bucket, NAME_sum and NAME_count). The live check (each expression run on real
scrapes) is in prometheus_test.py. Usage: grafana_test.py <source dir>.
"""
import json
import os
import re
import sys


def defined_metrics(src):
    names = set()
    pattern = re.compile(r'Add(Counter|Gauge|Histogram)\(\s*"(sluice_[a-z0-9_]+)"', re.S)
    for root, _, files in os.walk(os.path.join(src, "src", "runtime")):
        for f in files:
            if not f.endswith(".cc") or f.endswith("_test.cc"):
                continue
            for kind, name in pattern.findall(open(os.path.join(root, f)).read()):
                names.add(name)
                if kind == "Histogram":
                    names.update({name + "_bucket", name + "_sum", name + "_count"})
    return names


def main():
    src = os.path.abspath(sys.argv[1])
    defined = defined_metrics(src)
    if len(defined) < 10:
        print(f"FAIL: found only {len(defined)} metric definitions under src/runtime")
        return 1
    dash = json.load(open(os.path.join(src, "deploy", "grafana", "sluice.json")))
    bad = []
    for panel in dash["panels"]:
        if not panel.get("targets"):
            bad.append(f"panel '{panel['title']}' has no query")
        for t in panel.get("targets", []):
            used = re.findall(r"\bsluice_[a-z0-9_]+", t["expr"])
            if not used:
                bad.append(f"panel '{panel['title']}': no sluice metric in {t['expr']}")
            bad += [f"panel '{panel['title']}': {m} is not defined in src/runtime"
                    for m in used if m not in defined]
    for b in bad:
        print(f"FAIL: {b}")
    if not bad:
        print(f"ok: {len(dash['panels'])} panels, every metric defined")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
