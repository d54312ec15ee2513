#!/usr/bin/env bash
# ctest example_llm_pd_e2e (label e2e): prefill/decode disaggregation through the platform as a
# user runs it. `sluice up` (emulated GPUs), deploy examples/llm/llm-pd.yaml, then through the
# gateway's OpenAI API a non-streaming and a streaming chat completion; the instances' own stats
# must show the prefill on the prefill instance and the decode on the decode instance. Then
# `sluice mutate` switches the prefill instance to decode (the controller starts a new prefill
# instance) and both kinds of request are served again. Usage: pd_e2e_test.sh <build dir>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: pd_e2e_test.sh <build dir>}" && pwd)
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
sluice="$build/src/cli/sluice"
home=$(mktemp -d)
cleanup() { "$sluice" down --home "$home" >/dev/null 2>&1 || true; rm -rf "$home"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; "$sluice" status --home "$home" || true; exit 1; }

"$sluice" up --detach --home "$home" --gateway-port 0 --controller-port 0 --agent-port 0 \
  --emulated-gpus 4 >/dev/null
"$sluice" deploy --home "$home" --wait --timeout-s 180 "$here/llm-pd.yaml"
gw="http://127.0.0.1:$(jq -r .daemons.gateway.port "$home/run/daemons.json")"
ctl="http://127.0.0.1:$(jq -r .daemons.controller.port "$home/run/daemons.json")"

# Routed instances of llm-pd as "id role state url" lines.
routed() {
  curl -sf "$ctl/internal/v1/routes" |
    jq -r '.functions[] | select(.name == "llm-pd") | .instances[] |
           "\(.id) \(.role // "-") \(.state) \(.url)"'
}
# Waits until exactly $1 prefill and $2 decode instances are routed and ready.
wait_pools() {
  for _ in $(seq 1 600); do
    local r; r=$(routed)
    if [[ $(grep -c " prefill ready " <<<"$r") == "$1" && $(grep -c " decode ready " <<<"$r") == "$2" &&
          $(grep -vc " ready " <<<"$r") == 0 ]]; then
      return 0
    fi
    sleep 0.1
  done
  fail "pools never reached prefill=$1 decode=$2: $(routed | tr '\n' ';')"
}
stat_of() { curl -sf "http://$1/sluice/v1/stats" | jq -r ".$2"; }
chat() {  # $1: stream true|false; prints the answer's text
  local body
  body=$(jq -nc --argjson s "$1" \
    '{model: "llm-pd", stream: $s, max_tokens: 6,
      messages: [{role: "user", content: "tell me about prefill and decode"}]}')
  if [[ $1 == false ]]; then
    curl -sf -m 60 "$gw/v1/chat/completions" -H 'content-type: application/json' -d "$body" |
      jq -er '.choices[0].message.content | select(length > 0)'
  else
    local out
    out=$(curl -sfN -m 60 "$gw/v1/chat/completions" -H 'content-type: application/json' -d "$body")
    grep -q '^data: \[DONE\]' <<<"$out" || fail "stream did not end with [DONE]: $out"
    sed -n 's/^data: //p' <<<"$out" | grep -v '^\[DONE\]' |
      jq -rj '.choices[0].delta.content // empty'
    echo
  fi
}

wait_pools 1 1
read -r p_id _ _ p_url < <(routed | grep " prefill ")
read -r d_id _ _ d_url < <(routed | grep " decode ")
[[ $(stat_of "$p_url" role) == prefill && $(stat_of "$d_url" role) == decode ]] ||
  fail "instances do not run the roles the routes publish"
a=$(chat false) || fail "non-streaming chat failed"
b=$(chat true) || fail "streaming chat failed"
echo "non-stream: $a"; echo "stream: $b"
[[ -n $a && -n $b ]] || fail "empty completions"
[[ $(stat_of "$p_url" prefill_requests) == 2 && $(stat_of "$p_url" decode_requests) == 0 ]] ||
  fail "prefill instance $p_id: $(curl -sf "http://$p_url/sluice/v1/stats")"
[[ $(stat_of "$d_url" decode_requests) == 2 && $(stat_of "$d_url" prefill_requests) == 0 ]] ||
  fail "decode instance $d_id: $(curl -sf "http://$d_url/sluice/v1/stats")"
echo "P/D: prefill on instance $p_id, decode on instance $d_id: OK"

# Operator mutation: the prefill instance becomes a decode instance; the prefill pool gets a
# fresh instance (pools never go below one), and serving goes on. (The idle decode pool may
# later shrink back to one instance: the autoscaler's window restarts at the switch, 2 s.)
"$sluice" mutate llm-pd --home "$home" --instance "$p_id" --role decode
[[ $(stat_of "$p_url" role) == decode ]] || fail "instance $p_id did not switch"
routed | grep -q "^$p_id decode " || fail "instance $p_id not republished as decode"
for _ in $(seq 1 600); do
  routed | grep -v "^$p_id " | grep -q " prefill ready " && break
  sleep 0.1
done
read -r n_id _ _ n_url < <(routed | grep " prefill ready ") || fail "no new prefill instance"
[[ $n_id != "$p_id" ]] || fail "instance $p_id still routed as prefill"
a=$(chat false) || fail "non-streaming chat after the switch failed"
b=$(chat true) || fail "streaming chat after the switch failed"
[[ -n $a && -n $b ]] || fail "empty completions after the switch"
[[ $(stat_of "$n_url" prefill_requests) == 2 ]] || fail "new prefill instance $n_id did not prefill"
# Bad input gets a clear 4xx and a non-zero exit.
if "$sluice" mutate llm-pd --home "$home" --instance "$p_id" --role colocated 2>"$home/err.txt"; then
  fail "mutate to colocated accepted"
fi
grep -q "role" "$home/err.txt" || fail "mutate error does not name the field: $(cat "$home/err.txt")"
echo "role switch through sluice mutate keeps serving: OK"
