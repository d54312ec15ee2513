#!/usr/bin/env python3
"""PyTorch workloads for scripts/gpu-validate.sh, run under libsluice_cuda.so with a memory limit.

One workload per process (the allocator backend is fixed when CUDA initialises):
  matmul  a loop of half-precision matrix products, checked against float64 on the CPU
  graph   the same step captured once with torch.cuda.graphs and replayed, checked against eager
  async   the matmul loop with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (the caller sets
          it; this script checks the backend took effect), plus allocate/free churn
With --limit-bytes L > 0 it then checks the limit: torch.cuda.mem_get_info() reports L as the
total, and allocating past L raises torch.cuda.OutOfMemoryError with at most L reserved.
Prints one JSON line {"event": "torch_workload", "status": "pass"|"fail"|"skip", ...}; exit code
0 pass, 1 fail, 77 skip (no torch or no CUDA device).
"""

import argparse
import json
import os
import sys
import time

MIB = 1 << 20


def emit(record, code):
    print(json.dumps(record), flush=True)
    sys.exit(code)


def mapped_libraries():
    """The interception library and driver files mapped into this process (resolved paths)."""
    intercept, drivers = "", []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line[line.find("/"):].strip() if "/" in line else ""
            if "libsluice_cuda" in path:
                intercept = path
            elif "libcuda.so" in path and path not in drivers:
                drivers.append(path)
    return {"intercept": intercept, "drivers": drivers}


def timed(torch, step, iters):
    """Runs step() iters times; returns GPU ms per iteration (events) and host us per iteration."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    start.record()
    for _ in range(iters):
        step()
    stop.record()
    t1 = time.perf_counter()
    stop.synchronize()
    return {"gpu_ms_per_iter": start.elapsed_time(stop) / iters,
            "host_enqueue_us_per_iter": (t1 - t0) * 1e6 / iters}


def matmul_inputs(torch, size):
    gen = torch.Generator(device="cpu").manual_seed(1234)
    a = torch.randn(size, size, generator=gen).to("cuda", torch.float16)
    b = torch.randn(size, size, generator=gen).to("cuda", torch.float16)
    return a, b


def close_to_reference(torch, a, b, c, rows=8):
    """c's first rows against a float64 CPU product of the same (half-precision) inputs."""
    ref = a[:rows].double().cpu() @ b.double().cpu()
    err = (c[:rows].double().cpu() - ref).abs().max().item()
    scale = ref.abs().max().item()
    return err <= 2e-2 * max(scale, 1.0), err


def run_matmul(torch, args, checks):
    a, b = matmul_inputs(torch, args.size)
    out = {}

    def step():
        out["c"] = a @ b

    for _ in range(10):
        step()
    result = timed(torch, step, args.iters)
    ok, err = close_to_reference(torch, a, b, out["c"])
    checks["result_matches_cpu"] = ok
    result["max_abs_error"] = err
    return result


def run_graph(torch, args, checks):
    a, b = matmul_inputs(torch, args.size)
    static_out = torch.empty_like(a)

    def body():
        static_out.copy_(torch.relu(a @ b) * 0.5 + a)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside capture, as torch.cuda.graphs requires
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    result = timed(torch, graph.replay, args.iters)
    torch.cuda.synchronize()
    replayed = static_out.clone()
    body()  # eager
    torch.cuda.synchronize()
    diff = (replayed.float() - static_out.float()).abs().max().item()
    scale = static_out.float().abs().max().item()
    # cuBLAS may pick another algorithm under capture, so allow half-precision rounding.
    checks["replay_matches_eager"] = diff <= 1e-2 * max(scale, 1.0)
    result["replay_vs_eager_max_diff"] = diff
    return result


def run_async(torch, args, checks):
    backend = torch.cuda.memory.get_allocator_backend()
    checks["backend_is_cudaMallocAsync"] = backend == "cudaMallocAsync"
    result = run_matmul(torch, args, checks)
    churn = [torch.empty(((i % 7) + 1) * MIB, dtype=torch.uint8, device="cuda")
             for i in range(200)]
    del churn
    torch.cuda.synchronize()
    result["allocator_backend"] = backend
    return result


def check_limit(torch, limit, checks):
    """mem_get_info reports the limit; allocating past it raises OutOfMemoryError."""
    free, total = torch.cuda.mem_get_info()
    device_total = torch.cuda.get_device_properties(0).total_memory
    expected_total = min(limit, device_total)
    checks["mem_get_info_total_is_limit"] = total == expected_total
    chunk = 64 * MIB
    held, raised, guard = [], False, limit // chunk + 4
    while len(held) < guard:
        try:
            held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except torch.cuda.OutOfMemoryError:
            raised = True
            break
    reserved, allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
    held_bytes = len(held) * chunk
    del held
    torch.cuda.empty_cache()
    checks["oom_raised_past_limit"] = raised
    # What the library charges: the native allocator's segments (cudaMalloc) are its reserved
    # memory; under cudaMallocAsync every tensor is its own cudaMallocAsync, and memory the
    # driver's pool caches after a free is not charged (docs/intercept-protocol.md).
    async_backend = torch.cuda.memory.get_allocator_backend() == "cudaMallocAsync"
    checks["charged_within_limit"] = (allocated if async_backend else reserved) <= limit
    recovered = torch.empty(MIB, dtype=torch.uint8, device="cuda")  # works again after frees
    checks["allocates_after_oom"] = recovered.numel() == MIB
    return {"limit_bytes": limit, "device_total_bytes": device_total, "reported_total": total,
            "reported_free": free, "held_at_oom_bytes": held_bytes, "reserved_at_oom": reserved,
            "allocated_at_oom": allocated}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["matmul", "graph", "async"], required=True)
    parser.add_argument("--limit-bytes", type=int, default=0, help="0: skip the limit checks")
    parser.add_argument("--iters", type=int, default=500)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--expect-intercept", action="store_true",
                        help="fail unless libsluice_cuda.so is mapped into this process")
    args = parser.parse_args()
    record = {"event": "torch_workload", "workload": args.workload}
    try:
        import torch
    except ImportError as e:
        emit({**record, "status": "skip", "reason": f"import torch failed: {e}"}, 77)
    if not torch.cuda.is_available():
        emit({**record, "status": "skip", "reason": "torch.cuda.is_available() is False"}, 77)
    record.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
                  device=torch.cuda.get_device_name(0),
                  alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))
    checks = {}
    try:
        run = {"matmul": run_matmul, "graph": run_graph, "async": run_async}[args.workload]
        record["timing"] = run(torch, args, checks)
        if args.limit_bytes > 0:
            record["memory"] = check_limit(torch, args.limit_bytes, checks)
    except Exception as e:  # a workload that breaks under the library is a result, not a crash
        checks["ran_without_exception"] = False
        record["exception"] = f"{type(e).__name__}: {e}"
    record["mapped"] = mapped_libraries()
    if args.expect_intercept:
        checks["intercept_loaded"] = bool(record["mapped"]["intercept"])
    record["checks"] = checks
    passed = all(checks.values())
    record["status"] = "pass" if passed else "fail"
    emit(record, 0 if passed else 1)


if __name__ == "__main__":
    main()
