#!/usr/bin/env bash
# gpu-validate.sh: Sluice's GPU validation kit (docs/GPU.md). On a machine with an NVIDIA GPU, the
# CUDA toolkit (nvcc) and optionally PyTorch, builds Sluice and the test programs in tools/gpu,
# then measures per-launch overhead of libsluice_cuda.so (LD_PRELOAD and LD_LIBRARY_PATH loading),
# share accuracy (sluice node share-test, SM shares and time quotas), the memory limit on every allocation path, and
# PyTorch workloads under the library; writes OUT/gpu-validate-report.{json,md}.
# Exit: 0 all checks passed, 1 some check failed (report written), 2 cannot run here.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/gpu-validate.sh [options]
  --build-dir DIR      Sluice build directory (default: build-gpu-validate)
  --out DIR            report directory (default: out/gpu-validate)
  --skip-build         use an existing build in --build-dir
  --launches N         timed launches per overhead run (default 20000)
  --reps R             runs per overhead configuration, interleaved (default 5)
  --share-seconds S    measured window of each share test (default 10)
  --mem-limit BYTES    SLUICE_MEM_LIMIT_BYTES for the driver-API memory test (default 1 GiB)
  --torch-limit BYTES  SLUICE_MEM_LIMIT_BYTES for the PyTorch workloads (default 4 GiB)
  --no-torch           skip the PyTorch workloads
  --emulated           self-test of the kit on Sluice's emulated device (no GPU needed); the
                       report is marked as emulated and holds no GPU results
Environment: NVIDIA_SMI, NVCC, CUDA_HOME, PYTHON (default python3), CXX (emulated mode).
EOF
}

die() {  # cannot run on this machine: exit 2 with a message
  echo "gpu-validate: $*" >&2
  exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build-gpu-validate
OUT=$ROOT/out/gpu-validate
SKIP_BUILD=0 LAUNCHES=20000 REPS=5 SHARE_SECONDS=10 NO_TORCH=0 EMULATED=0
MEM_LIMIT=$((1 << 30)) TORCH_LIMIT=$((4 << 30))
PYTHON=${PYTHON:-python3}
while (($#)); do
  case $1 in
    --build-dir) BUILD=$(realpath -m "$2"); shift ;;
    --out) OUT=$(realpath -m "$2"); shift ;;
    --skip-build) SKIP_BUILD=1 ;;
    --launches) LAUNCHES=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --share-seconds) SHARE_SECONDS=$2; shift ;;
    --mem-limit) MEM_LIMIT=$2; shift ;;
    --torch-limit) TORCH_LIMIT=$2; shift ;;
    --no-torch) NO_TORCH=1 ;;
    --emulated) EMULATED=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
  shift
done
for n in "$LAUNCHES" "$REPS" "$SHARE_SECONDS" "$MEM_LIMIT" "$TORCH_LIMIT"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "numeric options must be positive integers, got '$n'"
done

# --- preconditions ---------------------------------------------------------------------------
command -v "$PYTHON" >/dev/null || die "$PYTHON not found (the report is written with Python 3)"

find_cuda_include() {
  local d
  for d in "${CUDA_HOME:-}/include" /usr/local/cuda/include /usr/include; do
    [[ -f $d/cuda.h ]] && { echo "$d"; return 0; }
  done
  return 1
}

# The real driver's libcuda.so.1 (resolved), as the loader would find it without our library.
find_real_driver() {
  local p
  local -a dirs
  IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
  p=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64|libcuda\.so\.1 \(libc6,AArch64/ {print $NF; exit}')
  for c in "$p" "${dirs[@]/%//libcuda.so.1}" /usr/lib/x86_64-linux-gnu/libcuda.so.1 \
           /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1; do
    [[ -n $c && -e $c ]] && { readlink -f "$c"; return 0; }
  done
  return 1
}

NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
if ((EMULATED)); then
  DEVICE_KIND=emulated
  CUDA_INC=$(find_cuda_include) || die "cuda.h not found (set CUDA_HOME): needed to build the kit"
  CXX=${CXX:-c++}
  command -v "$CXX" >/dev/null || die "no C++ compiler ($CXX)"
else
  DEVICE_KIND=cuda
  command -v "$NVIDIA_SMI" >/dev/null 2>&1 ||
    die "no NVIDIA GPU: '$NVIDIA_SMI' not found. This kit needs a machine with an NVIDIA GPU and" \
        "its driver (use --emulated for a GPU-free self-test of the kit itself)."
  GPU_LIST=$("$NVIDIA_SMI" -L 2>&1 || true)
  if ! grep -q '^GPU [0-9]' <<<"$GPU_LIST"; then
    die "no NVIDIA GPU: '$NVIDIA_SMI -L' lists none (${GPU_LIST:-no output}). This kit needs a" \
        "machine with an NVIDIA GPU (use --emulated for a GPU-free self-test of the kit)."
  fi
  NVCC=${NVCC:-$(command -v nvcc || true)}
  for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    [[ -z $NVCC && -x $c ]] && NVCC=$c
  done
  [[ -n $NVCC && -x $NVCC ]] || die "CUDA toolkit not found: no nvcc on PATH, \$CUDA_HOME/bin or /usr/local/cuda/bin"
  REAL_DRIVER=$(find_real_driver) || die "the NVIDIA driver's libcuda.so.1 was not found"
fi

# --- build -----------------------------------------------------------------------------------
TARGETS=(sluice sluice_intercept sluice-spin)
((EMULATED)) && TARGETS+=(sluice_intercept_emulated)
if ((!SKIP_BUILD)); then
  echo "gpu-validate: building ${TARGETS[*]} in $BUILD"
  BUILD_DIR=$BUILD "$ROOT/scripts/build" --target "${TARGETS[@]}" ||
    die "building Sluice failed (scripts/build; its output is above)"
fi
LIB=$BUILD/src/intercept/libsluice_cuda.so
SLUICE=$BUILD/src/cli/sluice
[[ -f $LIB ]] || die "$LIB missing (build target sluice_intercept; the CUDA headers are needed)"
[[ -x $SLUICE ]] || die "$SLUICE missing (build target sluice)"
if ((EMULATED)); then
  REAL_DRIVER=$BUILD/emulated/libcuda.so.1
  [[ -f $REAL_DRIVER ]] || die "$REAL_DRIVER missing (build target sluice_intercept_emulated)"
  REAL_DRIVER=$(readlink -f "$REAL_DRIVER")
  # A private emulated device for this run, removed at exit.
  export SLUICE_EMU_UUID
  SLUICE_EMU_UUID=$(printf 'EMU-%08x-6b69-7400-0000-%012x' "$$" "$(date +%s)")
  trap 'rm -f "/dev/shm/sluice-emu-$SLUICE_EMU_UUID"' EXIT
fi

rm -rf "$OUT"
mkdir -p "$OUT"/{bin,shim,raw/launch,raw/probe,raw/share,raw/mem,raw/torch}
RAW=$OUT/raw
KIT=$ROOT/tools/gpu
echo "gpu-validate: compiling tools/gpu into $OUT/bin"
if ((EMULATED)); then
  for p in launch_bench mem_limit cost_sampler_probe; do
    "$CXX" -std=c++17 -O2 -I"$CUDA_INC" -I"$ROOT/src" -o "$OUT/bin/$p" "$KIT/$p.cc" \
      -L"$(dirname "$REAL_DRIVER")" -lcuda || die "$CXX could not build tools/gpu/$p.cc"
  done
else
  for p in launch_bench mem_limit cost_sampler_probe; do
    "$NVCC" -std=c++17 -O2 -I"$ROOT/src" -o "$OUT/bin/$p" "$KIT/$p.cc" -lcuda ||
      die "nvcc could not build tools/gpu/$p.cc"
  done
  "$NVCC" -std=c++17 -O2 -o "$OUT/bin/launch_bench_rt" "$KIT/launch_bench_rt.cu" ||
    die "nvcc could not build tools/gpu/launch_bench_rt.cu"
fi
# The LD_LIBRARY_PATH way: a directory where libcuda.so.1 is the interception library.
ln -sf "$LIB" "$OUT/shim/libcuda.so.1"

# --- how each program runs -------------------------------------------------------------------
# run_in MODE FILE CMD...: runs CMD with libsluice_cuda.so loaded the MODE way (baseline: not at
# all), stdout to FILE, stderr to FILE.err, exit status to FILE.rc. Never fails the script.
run_in() {
  local mode=$1 file=$2
  shift 2
  local -a env=(env -u LD_PRELOAD -u SLUICE_TOKEN_SOCKET -u SLUICE_REAL_LIBCUDA -u SLUICE_GPU_UUID)
  local libpath=""
  ((EMULATED)) && libpath=$(dirname "$REAL_DRIVER")
  case $mode in
    baseline) ;;
    preload)
      env+=("LD_PRELOAD=$LIB")
      ((EMULATED)) && env+=("SLUICE_REAL_LIBCUDA=$REAL_DRIVER") ;;
    libpath)
      libpath=$OUT/shim${libpath:+:$libpath}
      env+=("SLUICE_REAL_LIBCUDA=$REAL_DRIVER") ;;
  esac
  env+=("LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  local rc=0
  timeout 600 "${env[@]}" "$@" >"$file" 2>"$file.err" || rc=$?
  echo "$rc" >"$file.rc"
  return 0
}

# --- 1. per-launch overhead ------------------------------------------------------------------
BENCHES=("driver kernel launch_bench" "driver ex launch_bench")
((EMULATED)) || BENCHES+=("runtime kernel launch_bench_rt" "runtime graph launch_bench_rt")
for b in "${BENCHES[@]}"; do
  read -r api entry prog <<<"$b"
  echo "gpu-validate: launch overhead, $api API, $entry ($REPS x 3 runs of $LAUNCHES launches)"
  for ((rep = 1; rep <= REPS; rep++)); do
    for mode in baseline preload libpath; do  # interleaved, so drift hits every mode alike
      run_in "$mode" "$RAW/launch/$api-$entry-$mode-$rep.json" \
        "$OUT/bin/$prog" --entry "$entry" --launches "$LAUNCHES"
    done
  done
done

# --- 1b. time-token sampler prototype (docs/time-based-tokens.md; no library involved) -------
echo "gpu-validate: time-token sampler probe"
run_in baseline "$RAW/probe/cost_sampler.json" "$OUT/bin/cost_sampler_probe"

# --- 2. share accuracy -----------------------------------------------------------------------
SHARE_DEVICE=cuda
((EMULATED)) && SHARE_DEVICE=emulated
# LIMITS or LIMITS@TIME_QUOTAS (HAS-GPU's (s, q): SM shares with time quotas; the expected share
# is s_i / max(1, sum s) x q_i, normalised, and of device time; docs/time-based-tokens.md).
for run in 0.3,0.7 0.5,0.5 0.1,0.9 0.5,0.5@0.3,0.7; do
  limits=${run%@*}
  quota_args=()
  [[ $run == *@* ]] && quota_args=(--time-quotas "${run#*@}")
  echo "gpu-validate: share test --limits $limits ${quota_args[*]} ($SHARE_SECONDS s)"
  f=$RAW/share/$run.json
  rc=0
  timeout 900 env -u LD_PRELOAD "$SLUICE" node share-test --device "$SHARE_DEVICE" \
    --limits "$limits" "${quota_args[@]}" --seconds "$SHARE_SECONDS" --json >"$f" 2>"$f.err" ||
    rc=$?
  echo "$rc" >"$f.rc"
done

# --- 3. memory limit -------------------------------------------------------------------------
for mode in preload libpath; do
  echo "gpu-validate: memory limit ($mode, $MEM_LIMIT bytes)"
  run_in "$mode" "$RAW/mem/$mode.json" env "SLUICE_MEM_LIMIT_BYTES=$MEM_LIMIT" \
    "$OUT/bin/mem_limit"
done

# --- 4. PyTorch ------------------------------------------------------------------------------
TORCH_VERSION=""
if ((EMULATED)); then
  echo "skipped: PyTorch needs a real GPU (the emulated device has no CUDA runtime support)" \
    >"$RAW/torch/status.txt"
elif ((NO_TORCH)); then
  echo "skipped: --no-torch" >"$RAW/torch/status.txt"
elif ! TORCH_VERSION=$("$PYTHON" -c 'import torch, sys; print(torch.__version__, torch.version.cuda);
sys.exit(0 if torch.cuda.is_available() else 3)' 2>"$RAW/torch/probe.err"); then
  echo "skipped: 'import torch' failed or torch sees no CUDA device: $(tail -1 "$RAW/torch/probe.err")" \
    >"$RAW/torch/status.txt"
  TORCH_VERSION=""
else
  echo "ran: torch $TORCH_VERSION" >"$RAW/torch/status.txt"
  echo "gpu-validate: PyTorch workloads (torch $TORCH_VERSION)"
  tw=("$PYTHON" -B "$KIT/torch_workloads.py")
  run_in baseline "$RAW/torch/matmul-baseline.json" "${tw[@]}" --workload matmul
  for w in matmul graph; do
    run_in preload "$RAW/torch/$w-preload.json" env "SLUICE_MEM_LIMIT_BYTES=$TORCH_LIMIT" \
      "${tw[@]}" --workload "$w" --limit-bytes "$TORCH_LIMIT" --expect-intercept
  done
  run_in preload "$RAW/torch/async-preload.json" env "SLUICE_MEM_LIMIT_BYTES=$TORCH_LIMIT" \
    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
    "${tw[@]}" --workload async --limit-bytes "$TORCH_LIMIT" --expect-intercept
fi

# --- 5. report -------------------------------------------------------------------------------
ENV_ARGS=(--env "real_driver=$REAL_DRIVER" --env "intercept_library=$LIB"
          --env "kernel=$(uname -r)" --env "host=$(uname -m)"
          --env "cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
          --env "git_commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
                 git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || echo '+dirty')"
          --env "launches_per_run=$LAUNCHES" --env "reps=$REPS"
          --env "share_seconds=$SHARE_SECONDS" --env "mem_limit_bytes=$MEM_LIMIT")
if ((EMULATED)); then
  ENV_ARGS+=(--env "gpu_model=none (emulated device $SLUICE_EMU_UUID)")
else
  q=$("$NVIDIA_SMI" --query-gpu=name,driver_version,memory.total,uuid --format=csv,noheader \
      -i 0 2>&1 || true)
  IFS=',' read -r g_name g_driver g_mem g_uuid <<<"$q"
  ENV_ARGS+=(--env "gpu_model=${g_name# }" --env "driver_version=${g_driver# }"
             --env "gpu_memory=${g_mem# }" --env "gpu_uuid=${g_uuid# }"
             --env "cuda_version_driver=$("$NVIDIA_SMI" 2>/dev/null |
                                          grep -o 'CUDA Version: [0-9.]*' | cut -d' ' -f3)"
             --env "nvcc=$("$NVCC" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)"
             --env "torch=${TORCH_VERSION:-not available}")
fi
rc=0
"$PYTHON" -B "$KIT/make_report.py" "$OUT" --device-kind "$DEVICE_KIND" "${ENV_ARGS[@]}" || rc=$?
echo "gpu-validate: report in $OUT/gpu-validate-report.md and .json"
[[ -f $OUT/gpu-validate-report.md ]] && grep -m1 '^Status' "$OUT/gpu-validate-report.md"
exit "$rc"
