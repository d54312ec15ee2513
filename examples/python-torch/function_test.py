#!/usr/bin/env python3
"""GPU test of function.py (ctest label gpu): exits 77 (skipped) without PyTorch or a CUDA
device; otherwise starts the function on a free port and checks health, infer, batch, trial,
stats and a clean SIGTERM drain."""
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

try:
    import torch
except ImportError:
    print("skipped: no PyTorch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)


def call(base, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PORT="0", SLUICE_MODEL_PATH="seed:1")
    p = subprocess.Popen([sys.executable, os.path.join(here, "function.py")], env=env,
                         stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(p.stdout.readline())
        base = "http://127.0.0.1:%d" % ready["port"]
        assert call(base, "/v2/health/ready")[0] == 200
        x = {"inputs": [{"name": "x", "shape": [2, 16], "datatype": "FP32",
                         "data": [0.5] * 32}]}
        code, out = call(base, "/v2/models/python-torch/infer", x)
        assert code == 200, out
        assert abs(sum(out["outputs"][0]["data"][:4]) - 1) < 1e-5, out
        code, out = call(base, "/sluice/v1/batch", {"requests": [x, {"inputs": 1}]})
        assert code == 200 and "error" in out["responses"][1], out
        code, out = call(base, "/sluice/v1/trial", {"batch": 4, "iterations": 3})
        assert code == 200 and out["throughput"] > 0, out
        assert call(base, "/sluice/v1/stats")[1]["served"] == 3
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    print("ok")


if __name__ == "__main__":
    main()
