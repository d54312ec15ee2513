#!/usr/bin/env bash
# The openai npm client against Sluice's gateway (ctest openai_npm_client, label e2e). Installs
# the pinned `openai` package with `npm ci` into <build>/openai-npm (cached across runs), starts
# the gateway driver and runs openai_client_test.mjs. Exit 77 (ctest: skipped) when node or npm is
# missing or the package cannot be installed (no network). Usage: run.sh <build dir>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh <build dir>}" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (scripts/setup installs them)"; exit 77
fi
npm_dir="$build/openai-npm"
mkdir -p "$npm_dir"
cp "$here/package.json" "$here/package-lock.json" "$here/openai_client_test.mjs" "$npm_dir/"
if ! cmp -s "$here/package-lock.json" "$npm_dir/node_modules/.sluice-lock" 2>/dev/null; then
  if ! (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIP: npm ci failed (no network to the npm registry?)"; exit 77
  fi
  cp "$here/package-lock.json" "$npm_dir/node_modules/.sluice-lock"
fi
driver="$build/tests/openai/openai_fake_platform"
coproc PLATFORM { "$driver"; }
trap 'exec {PLATFORM[1]}>&-; wait "$PLATFORM_PID" 2>/dev/null || true' EXIT
read -r -t 30 word port <&"${PLATFORM[0]}" || { echo "driver did not start"; exit 1; }
[[ $word == PORT ]] || { echo "driver said: $word $port"; exit 1; }
node "$npm_dir/openai_client_test.mjs" "http://127.0.0.1:$port" llm-demo
echo "openai client against the fake platform: OK"

# The same client through the platform as a user runs it: `sluice up` (emulated GPUs, ports of its
# own), the example LLM function deployed from examples/llm/llm.yaml (scale from zero on the first
# request), then `sluice down`.
sluice="$build/src/cli/sluice"
home=$(mktemp -d)
cleanup_up() { "$sluice" down --home "$home" >/dev/null 2>&1 || true; rm -rf "$home"; }
trap 'cleanup_up; exec {PLATFORM[1]}>&-; wait "$PLATFORM_PID" 2>/dev/null || true' EXIT
"$sluice" up --detach --home "$home" --gateway-port 0 --controller-port 0 --agent-port 0 >/dev/null
"$sluice" deploy --home "$home" --wait --timeout-s 120 "$here/../../examples/llm/llm.yaml"
gw_port=$(node -e 'const d=require(process.argv[1]); console.log(d.daemons.gateway.port)' \
  "$home/run/daemons.json")
node "$npm_dir/openai_client_test.mjs" "http://127.0.0.1:$gw_port" llm
echo "openai client through sluice up: OK"
