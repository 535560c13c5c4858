#!/usr/bin/env bash
# The README's `aep` session, with an `aep` installed by `cargo install --path
# crates/aep-cli` into a temporary root: a relay, a tail following it, a capture
# emitted, validated, and followed to the tail; a command nobody can take exits 3.
# Needs curl (the tail's subscription is awaited on /healthz).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/relay-url.sh
root=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT

# .ci/run installs it in the background while the tests run (AEP_INSTALLED); alone,
# this script installs it itself.
if [ -n "${AEP_INSTALLED:-}" ]; then aep=$AEP_INSTALLED; else
  cargo install -q --debug --locked --path crates/aep-cli --root "$root" --target-dir target
  aep="$root/bin/aep"
fi
"$aep" --version

# terminal 1: a relay
"$aep" relay --port 0 --host 127.0.0.1 --token T > "$root/relay.out" 2> "$root/relay.err" &
pids+=($!)
relay_url "$root/relay.out" "$root/relay.err" "aep relay" "$!"
export AEP_URL=$url AEP_TOKEN=T NO_COLOR=1

# terminal 2: follow it (JSON lines, since this is no terminal)
"$aep" tail --no-resume > "$root/tail.out" 2> "$root/tail.err" &
tail_pid=$!
pids+=("$tail_pid")
# live only: the capture goes out once the tail's subscription is in place
for _ in $(seq 200); do
  curl -s -H "authorization: Bearer T" "$url/healthz" | grep -q '"subscribers":1' && break
  sleep 0.1
done

# terminal 3: a capture of the golden corpus, checked and sent
capture=fixtures/conformance/golden/golden.jsonl
"$aep" validate "$capture"
"$aep" emit "$capture" > "$root/emit.json"
lines=$(wc -l < "$capture")
grep -q "\"delivered\":$lines" "$root/emit.json" || { cat "$root/emit.json"; exit 1; }
# what a consumer is sent: the capture but its commands, which are routed to their
# target, never broadcast (AEP-0004 §4 item 5); acks are events like any other
commands=$(grep -c '"type":"control\.' "$capture" || true)
acks=$(grep -c '"type":"control\.\(accepted\|rejected\)"' "$capture" || true)
held=$((lines - commands + acks))
for _ in $(seq 100); do
  [ "$(wc -l < "$root/tail.out")" -ge "$held" ] && break; sleep 0.1
done
kill -TERM "$tail_pid"; wait "$tail_pid"
got=$(wc -l < "$root/tail.out")
[ "$got" -eq "$held" ] || { echo "tail saw $got of $held events"; cat "$root/tail.err"; exit 1; }
"$aep" validate "$root/tail.out"

set +e
"$aep" send control.pause --session nobody
code=$?
set -e
[ "$code" -eq 3 ] || { echo "send to nobody exited $code, not 3"; exit 1; }
printf 'cli session: aep installed; %s events emitted, %s tailed and validated; no-route is exit 3\n' "$lines" "$held"
