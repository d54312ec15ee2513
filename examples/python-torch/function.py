#!/usr/bin/env python3
"""sluice-example-python-torch: a PyTorch inference function serving the Sluice Instance API
(docs/platform.md): GET /v2/health/live, /v2/health/ready, POST /v2/models/{name}/infer,
POST /sluice/v1/batch, POST /sluice/v1/trial, GET /sluice/v1/stats. Standard library HTTP
server plus torch; no other dependency. The model is the classifier example's MLP (16 -> 32 -> 4)
with weights from torch.manual_seed(N) for SLUICE_MODEL_PATH "seed:N". Batches run one at a
time, in arrival order, on one worker thread; the HTTP threads keep answering health checks.
SIGTERM/SIGINT drain: new work is refused with 503, accepted batches finish, then it exits 0.
Prints {"event":"ready","port":N} once the model is loaded (PORT=0 picks a free port)."""
import json
import os
import queue
import signal
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

IN_DIM, HIDDEN, CLASSES = 16, 32, 4


class Model:
    def __init__(self, model_path):
        seed = 42
        if model_path.startswith("seed:"):
            seed = int(model_path[5:])
        torch.manual_seed(seed)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.net = torch.nn.Sequential(
            torch.nn.Linear(IN_DIM, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
        ).to(self.device).eval()

    def peak_memory(self):
        return torch.cuda.max_memory_allocated() if self.device.type == "cuda" else 0

    def infer(self, requests, name):
        """One result per request: a KServe v2 response dict or {"error": text, "code": 400}."""
        rows, spans, results = [], [], [None] * len(requests)
        for i, req in enumerate(requests):
            try:
                inp = req["inputs"][0]
                t = torch.tensor(inp["data"], dtype=torch.float32).reshape(inp["shape"])
                if t.dim() == 1:
                    t = t.unsqueeze(0)
                if t.dim() != 2 or t.shape[1] != IN_DIM:
                    raise ValueError("need shape [%d] or [rows, %d]" % (IN_DIM, IN_DIM))
            except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
                results[i] = {"error": "inputs: %s" % e, "code": 400}
                continue
            spans.append((i, sum(r.shape[0] for r in rows), t.shape[0]))
            rows.append(t)
        if rows:
            with torch.no_grad():
                scores = torch.softmax(self.net(torch.cat(rows).to(self.device)), dim=1).cpu()
            for i, start, n in spans:
                s = scores[start:start + n]
                results[i] = {"model_name": name, "outputs": [
                    {"name": "scores", "shape": [n, CLASSES], "datatype": "FP32",
                     "data": s.flatten().tolist()},
                    {"name": "class", "shape": [n], "datatype": "INT64",
                     "data": s.argmax(dim=1).tolist()}]}
                if "id" in requests[i]:
                    results[i]["id"] = requests[i]["id"]
        return results


class Function:
    def __init__(self, name):
        self.name, self.model = name, None
        self.ready = self.draining = False
        self.in_flight = self.served = self.batches = 0
        self.lock = threading.Lock()
        self.jobs = queue.Queue()
        self.worker = threading.Thread(target=self._work, daemon=True)
        self.worker.start()

    def _work(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            fn, done, box = job
            try:
                box.append(fn())
            except Exception as e:  # the batch fails, the server keeps serving
                box.append(e)
            done.set()

    def run(self, fn, count):
        """Runs fn() on the worker in arrival order; None when refused (not ready/draining)."""
        with self.lock:
            if self.draining or not self.ready:
                return None
            self.in_flight += count
            done, box = threading.Event(), []
            self.jobs.put((fn, done, box))
        done.wait()
        with self.lock:
            self.in_flight -= count
        return box[0]

    def drain(self):
        with self.lock:
            self.draining = True
        self.jobs.put(None)
        self.worker.join()


def make_handler(fn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, code, message):
            self.reply(code, {"error": {"code": code, "message": message}})

        def body(self):
            n = int(self.headers.get("Content-Length", 0))
            return json.loads(self.rfile.read(n) or b"{}")

        def do_GET(self):
            if self.path == "/v2/health/live":
                return self.reply(200, {"live": True})
            if self.path == "/v2/health/ready":
                ok = fn.ready and not fn.draining
                return self.reply(200, {"ready": True}) if ok else self.error(503, "not ready")
            if self.path == "/sluice/v1/stats":
                return self.reply(200, {"in_flight": fn.in_flight, "served": fn.served,
                                        "batches": fn.batches})
            self.error(404, "no route " + self.path)

        def do_POST(self):
            try:
                body = self.body()
            except ValueError:
                return self.error(400, "body is not JSON")
            if self.path == "/sluice/v1/batch":
                return self.batch(body)
            if self.path == "/sluice/v1/trial":
                return self.trial(body)
            if self.path == "/v2/models/%s/infer" % fn.name:
                out = fn.run(lambda: fn.model.infer([body], fn.name), 1)
                if out is None:
                    return self.error(503, "not ready or draining")
                if isinstance(out, Exception):
                    return self.error(500, str(out))
                fn.served += 1
                fn.batches += 1
                return self.reply(400 if "error" in out[0] else 200, out[0])
            self.error(404, "no route " + self.path)

        def batch(self, body):
            reqs = body.get("requests") if isinstance(body, dict) else None
            if not isinstance(reqs, list):
                return self.error(400, "requests: body must be {\"requests\": [...]}")
            start = time.perf_counter()
            out = fn.run(lambda: fn.model.infer(reqs, fn.name), len(reqs))
            if out is None:
                return self.error(503, "not ready or draining")
            if isinstance(out, Exception):
                out = [{"error": "handler: %s" % out, "code": 500}] * len(reqs)
            fn.served += len(reqs)
            fn.batches += 1
            self.reply(200, {"responses": out, "exec_ms": (time.perf_counter() - start) * 1e3})

        def trial(self, body):
            b, k = body.get("batch", 1), body.get("iterations", 1)
            if not (isinstance(b, int) and 1 <= b <= 4096 and isinstance(k, int)
                    and 1 <= k <= 10000):
                return self.error(400, "batch/iterations: integers in [1, 4096] / [1, 10000]")
            sample = {"inputs": [{"name": "x", "shape": [1, IN_DIM], "datatype": "FP32",
                                  "data": [1.0] * IN_DIM}]}

            def run():
                lat = []
                for _ in range(k):
                    t0 = time.perf_counter()
                    fn.model.infer([sample] * b, fn.name)
                    if fn.model.device.type == "cuda":
                        torch.cuda.synchronize()
                    lat.append(time.perf_counter() - t0)
                return statistics.median(lat)

            med = fn.run(run, 0)
            if med is None:
                return self.error(503, "not ready or draining")
            if isinstance(med, Exception):
                return self.error(500, "trial: %s" % med)
            self.reply(200, {"latency_ms": med * 1e3, "throughput": b / med if med > 0 else 0,
                             "memory_bytes": fn.model.peak_memory(), "batch": b,
                             "iterations": k})

    return Handler


def main():
    fn = Function(os.environ.get("SLUICE_FUNCTION") or "python-torch")
    server = ThreadingHTTPServer((os.environ.get("SLUICE_HOST", "127.0.0.1"),
                                  int(os.environ["PORT"])), make_handler(fn))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fn.model = Model(os.environ.get("SLUICE_MODEL_PATH", ""))
    fn.model.infer([{"inputs": [{"name": "x", "shape": [IN_DIM], "datatype": "FP32",
                                 "data": [0.0] * IN_DIM}]}], fn.name)  # warm-up
    fn.ready = True
    print(json.dumps({"event": "ready", "port": server.server_address[1]}), flush=True)
    stop.wait()
    fn.drain()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
