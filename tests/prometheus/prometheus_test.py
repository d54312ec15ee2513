#!/usr/bin/env python3
"""Prometheus for real (issue 14, ctest `prometheus_scrape`, label prometheus).

Brings up `sluice up` (emulated GPUs), checks every daemon's /metrics with `promtool check
metrics`, starts Debian's `prometheus` scraping the agent, controller and gateway every 1 s, runs
`sluice load` against a classifier, then asks Prometheus (PromQL over its HTTP API) for the request
rate, the requests, the SM share of each instance, the cold starts, the active GPUs and the token
server state, and checks them against what Sluice itself reports (the load report, the
controller's and the agent's JSON). Tolerances are stated beside each check. Finally every PromQL
expression of deploy/grafana/sluice.json must run and name only metrics Prometheus has.

Usage: prometheus_test.py <build dir> <source dir>. Exit 77 (ctest: skipped) when the prometheus
or promtool binary is missing.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

FUNCTION = "classifier"
RPS = 20
SECONDS = 16


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prom:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr, at=None):
        q = {"query": expr}
        if at is not None:
            q["time"] = f"{at:.3f}"
        body = json.loads(get(f"{self.base}/api/v1/query?" + urllib.parse.urlencode(q)))
        if body.get("status") != "success":
            fail(f"PromQL {expr!r}: {body}")
        return body["data"]["result"]

    def scalar(self, expr, at=None):
        r = self.query(expr, at)
        if len(r) != 1:
            fail(f"PromQL {expr!r}: expected one series, got {r}")
        return float(r[0]["value"][1])

    def metric_names(self):
        return set(json.loads(get(f"{self.base}/api/v1/label/__name__/values"))["data"])


def check(name, got, want, tol_abs=0.0, tol_rel=0.0):
    ok = abs(got - want) <= max(tol_abs, tol_rel * abs(want))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: prometheus {got:g}, sluice {want:g} "
          f"(tolerance abs {tol_abs:g}, rel {tol_rel:g})", flush=True)
    if not ok:
        sys.exit(1)


def wait_for(what, predicate, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if predicate():
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.5)
    fail(f"timed out waiting for {what}")


def grafana_exprs(path):
    exprs = []
    for panel in json.load(open(path))["panels"]:
        for t in panel.get("targets", []):
            exprs.append(t["expr"])
    return exprs


def main():
    build, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} not installed (scripts/setup installs Debian's prometheus)")
            return 77
    sluice = os.path.join(build, "src", "cli", "sluice")
    work = tempfile.mkdtemp(prefix="sluice-prom-")
    home = os.path.join(work, "home")
    prom_proc = None
    try:
        subprocess.run([sluice, "up", "--detach", "--home", home, "--emulated-gpus", "2",
                        "--gateway-port", "0", "--controller-port", "0", "--agent-port", "0",
                        "--load-report-ms", "1000"], check=True, stdout=subprocess.DEVNULL)
        daemons = json.load(open(os.path.join(home, "run", "daemons.json")))["daemons"]
        ports = {k: daemons[k]["port"] for k in ("agent", "controller", "gateway")}
        print(f"sluice up: {ports}", flush=True)

        spec = os.path.join(work, "classifier.yaml")
        with open(os.path.join(src, "examples", "classifier", "classifier.yaml")) as f:
            text = f.read()
        with open(spec, "w") as f:  # a pre-set quota skips profiling
            f.write(text + "quota: {request: 0.3, limit: 0.6}\n")
        subprocess.run([sluice, "deploy", spec, "--home", home, "--wait"], check=True,
                       stdout=subprocess.DEVNULL)

        prom_port = free_port()
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n")
            for job, port in ports.items():
                f.write(f"  - job_name: sluice-{job}\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{port}']\n")
        subprocess.run(["promtool", "check", "config", config], check=True)
        prom_proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work}/tsdb",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"))
        prom = Prom(prom_port)
        wait_for("prometheus ready", lambda: "Ready" in get(f"{prom.base}/-/ready"))
        wait_for("all three targets up",
                 lambda: sum(float(r["value"][1])
                             for r in prom.query('up{job=~"sluice-.*"}')) == 3)

        trace = os.path.join(work, "trace.csv")
        with open(trace, "w") as f:
            f.write("second,rps\n" + "".join(f"{s},{RPS}\n" for s in range(SECONDS)))
        x = ('{"inputs":[{"name":"x","shape":[1,16],"datatype":"FP32","data":'
             '[0.5,-1,0.25,2,0,1,-0.5,0.75,1.5,-2,0.1,0.2,-0.3,0.4,0.6,-0.7]}]}')
        start = time.time()
        load = subprocess.run([sluice, "load", FUNCTION, "--home", home, "--trace", trace,
                               "--seconds", str(SECONDS), "--data", x, "--json"],
                              check=True, capture_output=True, text=True)
        end = time.time()
        if load.stderr.strip():
            fail(f"`sluice load` piped printed on stderr: {load.stderr!r}")
        report = json.loads(load.stdout)
        print(f"sluice load: sent {report['sent']} ok {report['ok']} errors {report['errors']}",
              flush=True)
        time.sleep(3)  # at least two scrapes after the last answer

        # /metrics of each daemon passes promtool's format and naming lint.
        for job, port in ports.items():
            text = get(f"http://127.0.0.1:{port}/metrics")
            r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True)
            if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
                fail(f"promtool check metrics on the {job}: {r.stdout}{r.stderr}")
            print(f"ok   promtool check metrics: {job}", flush=True)

        sel = f'function="{FUNCTION}"'
        # Requests: the gateway's counter after the run equals what the load generator sent
        # (every request was answered or timed out at the gateway): exact.
        check("requests (sum of sluice_gateway_requests_total)",
              prom.scalar(f"sum(sluice_gateway_requests_total{{{sel}}})"), report["sent"])
        # Request rate over the middle 8 s of the load vs the load's own mean rate: Poisson
        # arrivals at 20/s give about +-8 % (1 sigma) over 8 s; tolerance 30 %.
        mid = (start + end) / 2
        check("request rate (rate(...[8s]) mid-load, req/s)",
              prom.scalar(f"sum(rate(sluice_gateway_requests_total{{{sel}}}[8s]))", at=mid + 4),
              report["sent"] / SECONDS, tol_rel=0.30)
        # Cold starts: the controller's counter equals its own JSON: exact.
        fn = json.loads(get(f"http://127.0.0.1:{ports['controller']}/admin/v1/functions/{FUNCTION}"))
        check("cold starts (sluice_controller_cold_starts_total)",
              prom.scalar(f"sum(sluice_controller_cold_starts_total{{{sel}}})"),
              fn["cold_starts"])
        # SM share per instance: the same instances as the agent's JSON, each share within 0.25
        # of the agent's value read now (both are per-period token budgets, so they move).
        node = json.loads(get(f"http://127.0.0.1:{ports['agent']}/agent/v1/node"))
        agent = {str(i["id"]): i["sm_share"] for i in node["instances"]
                 if i["function"] == FUNCTION}
        series = prom.query(f"sluice_agent_instance_sm_share{{{sel}}}")
        got = {s["metric"]["instance_id"]: float(s["value"][1]) for s in series}
        if not agent or set(got) != set(agent):
            fail(f"instances: prometheus {sorted(got)} vs agent {sorted(agent)}")
        for iid, share in agent.items():
            check(f"SM share of instance {iid}", got[iid], share, tol_abs=0.25)
        # Active GPUs: distinct GPUs of the agent's instances: exact.
        gpus = {i["gpu"] for i in node["instances"] if i["state"] not in ("exited", "failed")}
        check("active GPUs (sluice_controller_active_gpus)",
              prom.scalar("sluice_controller_active_gpus"), len(gpus))
        # Token server state: one state per GPU, and the agent's JSON names the same one.
        for g in node["gpus"]:
            states = prom.query(f'sluice_agent_gpu_share_state{{gpu="{g["uuid"]}"}} == 1')
            if len(states) != 1:
                fail(f"GPU {g['uuid']}: {len(states)} current states")
            print(f"ok   token server state of {g['uuid']}: {states[0]['metric']['state']} "
                  f"(agent JSON: {g.get('share_state')})", flush=True)

        # Grafana: every expression runs and names only metrics Prometheus has scraped.
        names = prom.metric_names()
        for expr in grafana_exprs(os.path.join(src, "deploy", "grafana", "sluice.json")):
            for m in set(re.findall(r"\bsluice_[a-z0-9_]+", expr)):
                if m not in names:
                    fail(f"grafana expression names {m}, which Prometheus does not have: {expr}")
            prom.query(expr.replace("$__rate_interval", "5s").replace("$__range", "1m")
                       .replace("$__interval", "1s"))
        print("ok   every deploy/grafana/sluice.json expression runs on the scraped metrics")
        print("PASS", flush=True)
        return 0
    finally:
        if prom_proc is not None:
            prom_proc.terminate()
            prom_proc.wait(timeout=20)
        subprocess.run([sluice, "down", "--home", home], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
