#!/usr/bin/env bash
# The dashboard in a real browser (ctest dashboard_browser, label browser): `sluice up` (emulated
# GPUs, ports of its own, the demo's short lazy window), the demo's two functions deployed
# (traces/trainer-demo.yaml, examples/classifier), then dashboard_test.mjs drives the controller's
# /dashboard in Debian's headless chromium through puppeteer-core (pinned, `npm ci` into
# <build>/dashboard-npm, cached) while `sluice load` replays traces/bursty-demo.csv: no console
# errors, both functions listed, the request-rate chart's data changes under load; then the
# saved /dashboard/report opens offline. Screenshots land in <build>/dashboard-test/.
# Exit 77 (ctest: skipped) without node/npm, without chromium, or when `npm ci` fails.
# Usage: run.sh <build dir> [--seconds N] [--screenshot PATH] [--report PATH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: run.sh <build dir> [--seconds N] [--screenshot PATH]}" && pwd)
shift
secs=42
shot=""
report=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) secs="$2"; shift 2 ;;
    --screenshot) shot="$2"; shift 2 ;;
    --report) report="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (scripts/setup installs them)"; exit 77
fi
chromium=${SLUICE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z $chromium ]]; then
  echo "SKIP: chromium not installed (scripts/setup installs Debian's chromium)"; exit 77
fi
npm_dir="$build/dashboard-npm"
mkdir -p "$npm_dir"
cp "$here/package.json" "$here/package-lock.json" "$here/dashboard_test.mjs" "$npm_dir/"
if ! cmp -s "$here/package-lock.json" "$npm_dir/node_modules/.sluice-lock" 2>/dev/null; then
  if ! (cd "$npm_dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIP: npm ci failed (no network to the npm registry?)"; exit 77
  fi
  cp "$here/package-lock.json" "$npm_dir/node_modules/.sluice-lock"
fi
out="$build/dashboard-test"
mkdir -p "$out"
[[ -n $shot ]] || shot="$out/dashboard.png"
[[ -n $report ]] || report="$out/dashboard-report.html"

sluice="$build/src/cli/sluice"
home=$(mktemp -d "${TMPDIR:-/tmp}/sluice-dash-XXXXXX")
cleanup() { "$sluice" down --home "$home" >/dev/null 2>&1 || true; rm -rf "$home"; }
trap cleanup EXIT
cd "$root"
"$sluice" up --detach --home "$home" --device emulated --emulated-gpus 2 \
  --gateway-port 0 --controller-port 0 --agent-port 0 \
  --lazy-window-s 10 --phi-out 5 --phi-in 8 --load-report-ms 1000 >/dev/null
"$sluice" deploy traces/trainer-demo.yaml --home "$home" --wait >/dev/null
"$sluice" deploy examples/classifier/classifier.yaml --home "$home" --wait >/dev/null
ctl_port=$(node -e 'const d=require(process.argv[1]); console.log(d.daemons.controller.port)' \
  "$home/run/daemons.json")
echo "dashboard: http://127.0.0.1:$ctl_port/dashboard"
node "$npm_dir/dashboard_test.mjs" --chromium "$chromium" \
  --url "http://127.0.0.1:$ctl_port" --sluice "$sluice" --home "$home" --seconds "$secs" \
  --trace traces/bursty-demo.csv --screenshot "$shot" --report "$report"
echo "dashboard in chromium: OK (screenshot $shot, report $report)"
