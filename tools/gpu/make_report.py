#!/usr/bin/env python3
"""Builds the GPU validation report from the raw outputs scripts/gpu-validate.sh collected.

Reads OUT/raw/{launch,share,mem,torch}/ (each program's JSON stdout, plus NAME.rc holding its
exit status) and writes OUT/gpu-validate-report.json and OUT/gpu-validate-report.md.
Every number comes from a file in OUT/raw; nothing is estimated. Exit status: 0 when every
check passed, 1 otherwise.

Usage: make_report.py OUT --device-kind cuda|emulated [--env KEY=VALUE ...]
"""

import argparse
import datetime
import glob
import json
import os
import statistics
import sys

SHARE_TOLERANCE = 0.05  # the acceptance bound for a two-process split
MODES = ("baseline", "preload", "libpath")


def read_rc(path):
    try:
        with open(path + ".rc") as f:
            return int(f.read().strip() or "-1")
    except (OSError, ValueError):
        return -1


def json_lines(path):
    """Every JSON object line of a file (other lines, e.g. loader noise, are skipped)."""
    records = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    except OSError:
        pass
    return records


def first_event(records, event):
    return next((r for r in records if r.get("event") == event), None)


class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, passed, detail=""):
        self.items.append({"name": name, "pass": bool(passed), "detail": detail})


def launch_runs(raw):
    """{(api, entry): {mode: [record per rep]}} from raw/launch/API-ENTRY-MODE-REP.json."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(raw, "launch", "*.json"))):
        api, entry, mode, _rep = os.path.basename(path)[:-5].split("-")
        rec = first_event(json_lines(path), "launch_bench")
        runs.setdefault((api, entry), {}).setdefault(mode, []).append(
            {"rc": read_rc(path), "record": rec, "file": os.path.relpath(path, raw)})
    return runs


def mode_stats(reps):
    ok = [r["record"] for r in reps if r["rc"] == 0 and r["record"]]
    if not ok:
        return None
    pick = {"median": [r["per_launch_ns"]["median"] for r in ok],
            "p99": [r["per_launch_ns"]["p99"] for r in ok],
            "batch": [r["batch_host_ns_per_launch"]["mean"] for r in ok],
            "gpu": [r["batch_gpu_ns_per_kernel"]["median"] for r in ok]}
    return {"reps": len(ok), "per_launch_median_ns": statistics.median(pick["median"]),
            "per_launch_p99_ns": statistics.median(pick["p99"]),
            "batch_mean_ns_per_launch": statistics.median(pick["batch"]),
            "gpu_ns_per_kernel": statistics.median(pick["gpu"]),
            "per_launch_median_ns_by_rep": pick["median"], "per_launch_p99_ns_by_rep": pick["p99"],
            "device": ok[0]["device"], "driver_version": ok[0]["driver_version"],
            "mapped": ok[0]["mapped"]}


def launch_section(raw, env, checks):
    out = []
    real = env.get("real_driver", "")
    for (api, entry), by_mode in sorted(launch_runs(raw).items()):
        row = {"api": api, "entry": entry, "modes": {}}
        for mode in MODES:
            reps = by_mode.get(mode, [])
            failed = [r["file"] for r in reps if r["rc"] != 0 or not r["record"]]
            checks.add(f"launch {api}/{entry}/{mode}: all runs succeeded", reps and not failed,
                       ", ".join(failed))
            stats = mode_stats(reps)
            if stats is None:
                continue
            row["modes"][mode] = stats
            loaded = bool(stats["mapped"]["intercept"])
            checks.add(f"launch {api}/{entry}/{mode}: interception library "
                       f"{'absent' if mode == 'baseline' else 'loaded'}",
                       loaded == (mode != "baseline"), stats["mapped"]["intercept"])
            if mode != "baseline" and real:  # by file name: a driver may be installed twice
                names = [os.path.basename(d) for d in stats["mapped"]["drivers"]]
                checks.add(f"launch {api}/{entry}/{mode}: real driver mapped",
                           os.path.basename(real) in names, ", ".join(stats["mapped"]["drivers"]))
        base = row["modes"].get("baseline")
        for mode in MODES[1:]:
            m = row["modes"].get(mode)
            if base and m:
                for key in ("per_launch_median_ns", "per_launch_p99_ns", "batch_mean_ns_per_launch"):
                    m["added_" + key] = m[key] - base[key]
        out.append(row)
    return out


def probe_section(raw, checks):
    """The time-token sampler prototype: learned vs true kernel time per shape."""
    path = os.path.join(raw, "probe", "cost_sampler.json")
    if not os.path.exists(path):
        return None
    rec = first_event(json_lines(path), "cost_sampler_probe")
    if rec is None:
        checks.add("sampler probe: completed", False, json.dumps(json_lines(path))[-300:])
        return {"rc": read_rc(path)}
    checks.add("sampler probe: no sample dropped", rec["dropped"] == 0, f"dropped {rec['dropped']}")
    for s in rec["shapes"]:
        diff = abs(s["estimate_ns"] - s["true_ns"])
        ok = s["samples"] >= 8 and (diff <= 0.10 * s["true_ns"] or diff <= 2000)
        checks.add(f"sampler probe: grid {s['grid']} x {s['block_ns']} ns learned within 10 %",
                   ok, f"{s['samples']} samples, estimate {s['estimate_ns']} ns, "
                       f"true {s['true_ns']} ns")
    return {"rc": read_rc(path), **rec}


def share_section(raw, checks):
    out = []
    for path in sorted(glob.glob(os.path.join(raw, "share", "*.json"))):
        rc = read_rc(path)
        records = json_lines(path)
        rec = records[0] if records else None
        name = os.path.basename(path)[:-5]
        # NAME is LIMITS or LIMITS@TIME_QUOTAS (a time-quota share check).
        row = {"limits": name, "rc": rc}
        if rec:
            row.update({k: rec.get(k) for k in ("device", "device_name", "expected", "measured",
                                                "max_abs_error", "blocks", "period_ms",
                                                "max_tokens", "capacity_blocks_per_s",
                                                "registered", "time_quotas",
                                                "expected_time_share", "measured_time_share",
                                                "max_abs_time_error")})
        # Reports of a share-test without time quotas have no max_abs_time_error: 0 then.
        error = max(rec.get("max_abs_error", 1), rec.get("max_abs_time_error") or 0) if rec else 1
        passed = rc == 0 and rec is not None and error <= SHARE_TOLERANCE
        try:
            with open(path[:-5] + ".err") as f:
                err = f.read().strip()[-400:]
        except OSError:
            err = ""
        checks.add(f"share {name}: max abs error <= {SHARE_TOLERANCE}", passed,
                   err if not rec else f"max_abs_error {rec.get('max_abs_error')}, "
                                       f"max_abs_time_error {rec.get('max_abs_time_error')}")
        out.append(row)
    return out


def mem_section(raw, device_kind, checks):
    out = {}
    for path in sorted(glob.glob(os.path.join(raw, "mem", "*.json"))):
        mode = os.path.basename(path)[:-5]
        records = json_lines(path)
        info = first_event(records, "mem_info")
        paths = [r for r in records if r.get("event") == "mem_path"]
        summary = first_event(records, "mem_summary")
        out[mode] = {"rc": read_rc(path), "info": info, "paths": paths, "summary": summary}
        checks.add(f"memory {mode}: cuMemGetInfo total is the limit",
                   info and info.get("status") == "pass",
                   json.dumps(info) if info else "no mem_info line")
        for p in paths:
            if p["status"] == "unsupported" and device_kind == "emulated":
                checks.add(f"memory {mode}: {p['path']} skipped (emulated driver lacks it)", True,
                           p.get("detail", ""))
                continue
            checks.add(f"memory {mode}: {p['path']} stops at the limit with OUT_OF_MEMORY",
                       p["status"] == "pass", p.get("detail", ""))
        if summary is None:
            errors = [r for r in records if r.get("event") == "error"]
            checks.add(f"memory {mode}: program completed", False, json.dumps(errors))
        elif not summary["mapped"]["intercept"]:
            checks.add(f"memory {mode}: interception library loaded", False, "")
    return out


def torch_section(raw, checks):
    status_path = os.path.join(raw, "torch", "status.txt")
    status = open(status_path).read().strip() if os.path.exists(status_path) else "not run"
    out = {"status": status, "workloads": []}
    for path in sorted(glob.glob(os.path.join(raw, "torch", "*.json"))):
        rec = first_event(json_lines(path), "torch_workload")
        name = os.path.basename(path)[:-5]
        out["workloads"].append({"run": name, "rc": read_rc(path), "record": rec})
        if rec is None:
            checks.add(f"torch {name}: produced a result", False, "no torch_workload line")
        elif rec["status"] != "skip":
            failed = [k for k, v in rec.get("checks", {}).items() if not v]
            checks.add(f"torch {name}: {rec['workload']} passed", rec["status"] == "pass",
                       ", ".join(failed) + (" " + rec.get("exception", "")).rstrip())
    return out


def fmt(x, digits=0):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def markdown(report):
    lines = ["# Sluice GPU validation report", ""]
    if report["device_kind"] == "emulated":
        lines += ["> **EMULATED DEVICE SELF-TEST: these are not GPU results.** The kit ran against "
                  "Sluice's software driver (docs/emulated-device.md) to check the kit itself.", ""]
    s = report["summary"]
    lines += [f"Status: **{s['status'].upper()}** ({s['passed']} of {s['passed'] + s['failed']} "
              f"checks passed). Generated {report['generated_at']}.", "", "## Environment", "",
              "| key | value |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in sorted(report["environment"].items())]
    lines += ["", "## Per-launch overhead (host ns per launch call)", "",
              "Median over repetitions of each run's median/p99; added = mode minus baseline. "
              "baseline: no library; preload: LD_PRELOAD; libpath: LD_LIBRARY_PATH + "
              "SLUICE_REAL_LIBCUDA. Launches are ungated (no token server).", "",
              "| api | entry | mode | median | p99 | added median | added p99 | batch mean | "
              "added batch mean | GPU ns/kernel | reps |", "| --- " * 11 + "|"]
    for row in report["launch_overhead"]:
        for mode, m in row["modes"].items():
            lines.append(
                f"| {row['api']} | {row['entry']} | {mode} | {fmt(m['per_launch_median_ns'])} | "
                f"{fmt(m['per_launch_p99_ns'])} | {fmt(m.get('added_per_launch_median_ns'))} | "
                f"{fmt(m.get('added_per_launch_p99_ns'))} | {fmt(m['batch_mean_ns_per_launch'], 1)} | "
                f"{fmt(m.get('added_batch_mean_ns_per_launch'), 1)} | {fmt(m['gpu_ns_per_kernel'])} | "
                f"{m['reps']} |")
    p = report.get("sampler_probe")
    if p and "shapes" in p:
        lines += ["", "## Time-token sampler prototype (`tools/gpu/cost_sampler_probe`)", "",
                  f"1 launch in {p['period']:.0f} sampled with an event pair, collected with "
                  f"cuEventQuery; host ns per launch: sampled median "
                  f"{p['sampled_launch_ns']['median']} (p99 {p['sampled_launch_ns']['p99']}), "
                  f"unsampled median {p['unsampled_launch_ns']['median']} "
                  f"(p99 {p['unsampled_launch_ns']['p99']}).", "",
                  "| grid | ns per block | samples | learned ns | true ns | relative error |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {s['grid']} | {s['block_ns']} | {s['samples']} | {s['estimate_ns']} | "
                  f"{s['true_ns']} | {s['relative_error']:+.3f} |" for s in p["shapes"]]
    lines += ["", "## Share accuracy (`sluice node share-test`)", "",
              "Rows `LIMITS@TIME_QUOTAS` give each process a time quota q as well; "
              "expected = s_i / max(1, sum s) x q_i, normalised, and as a share of device time.",
              "",
              "| limits[@time quotas] | device | expected | measured | expected time share | "
              "measured time share | max abs error | exit |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in report["share_accuracy"]:
        def col(key):
            return ", ".join(f"{x:.3f}" for x in r.get(key) or []) or "-"
        err = fmt(r.get("max_abs_error"), 3)
        if r.get("max_abs_time_error") is not None:
            err += f" / {fmt(r.get('max_abs_time_error'), 3)}"
        lines.append(f"| {r['limits']} | {r.get('device', '-')} | {col('expected')} | "
                     f"{col('measured')} | {col('expected_time_share')} | "
                     f"{col('measured_time_share')} | {err} | {r['rc']} |")
    lines += ["", "## Memory limit", "", "| mode | path | status | allocated / limit | error | "
              "oversize error | detail |", "| --- " * 7 + "|"]
    for mode, m in report["memory_limit"].items():
        for p in m["paths"]:
            alloc = (f"{p['allocated_bytes']} / {p['limit_bytes']}"
                     if "allocated_bytes" in p else "-")
            lines.append(f"| {mode} | {p['path']} | {p['status']} | {alloc} | {p.get('error', '-')} "
                         f"| {p.get('oversize_error', '-')} | {p.get('detail', '')} |")
    t = report["torch"]
    lines += ["", f"## PyTorch ({t['status']})", "",
              "| run | status | GPU ms/iter | host us/iter | failed checks |",
              "| --- | --- | --- | --- | --- |"]
    for w in t["workloads"]:
        rec = w["record"] or {}
        timing = rec.get("timing", {})
        failed = [k for k, v in rec.get("checks", {}).items() if not v]
        lines.append(f"| {w['run']} | {rec.get('status', 'no result')} | "
                     f"{fmt(timing.get('gpu_ms_per_iter'), 3)} | "
                     f"{fmt(timing.get('host_enqueue_us_per_iter'), 1)} | "
                     f"{', '.join(failed) or rec.get('reason', '')} |")
    lines += ["", "## Checks", "", "| check | result | detail |", "| --- | --- | --- |"]
    for c in sorted(report["checks"], key=lambda c: c["pass"]):
        detail = c["detail"].replace("|", "/").replace("\n", " ")[:300]
        lines.append(f"| {c['name']} | {'pass' if c['pass'] else 'FAIL'} | {detail} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description="write the GPU validation report")
    parser.add_argument("out")
    parser.add_argument("--device-kind", choices=["cuda", "emulated"], required=True)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    raw = os.path.join(args.out, "raw")
    env = dict(kv.split("=", 1) for kv in args.env if "=" in kv)
    checks = Checks()
    report = {
        "schema": "sluice-gpu-validate/1",
        "device_kind": args.device_kind,
        "gpu_results": args.device_kind == "cuda",
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": env,
        "launch_overhead": launch_section(raw, env, checks),
        "sampler_probe": probe_section(raw, checks),
        "share_accuracy": share_section(raw, checks),
        "memory_limit": mem_section(raw, args.device_kind, checks),
        "torch": torch_section(raw, checks),
    }
    report["checks"] = checks.items
    failed = sum(not c["pass"] for c in checks.items)
    report["summary"] = {"passed": len(checks.items) - failed, "failed": failed,
                         "status": "pass" if failed == 0 and checks.items else "fail"}
    with open(os.path.join(args.out, "gpu-validate-report.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "gpu-validate-report.md"), "w") as f:
        f.write(markdown(report))
    return 0 if report["summary"]["status"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
