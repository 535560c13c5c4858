#!/usr/bin/env bash
# The relay cluster (feature `nats`) end to end: one nats-server with a temporary store,
# two relays on it (--buffer 8, one token), the protocol's live checker (--evict)
# against each, and the Python SDK's smoke.py against one. The relay is the debug build
# cluster-control-live.sh uses too: a release build would compile the whole tree again
# for checks that measure nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/relay-url.sh
source .ci/nats-server.sh
shared=$(cd ../shared && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# .ci/run builds every binary once before its checks start (AEP_CI_PREBUILT); alone,
# this script builds them itself.
[ -n "${AEP_CI_PREBUILT:-}" ] || cargo build -q --workspace --bins --examples
relay_bin=target/debug/aep-relay

# nats-server on a port of its own choosing
start_nats "$work"
pids+=("$nats_pid")

# one relay of the fleet, its address in $url (its first stdout line names it)
start_relay() {
  local name=$1; shift
  "$relay_bin" --port 0 --host 127.0.0.1 --token T --buffer 8 --nats "$nats_url" \
    --nats-stream CILIVE "$@" > "$work/$name.out" 2> "$work/$name.log" &
  pids+=("$!")
  relay_url "$work/$name.out" "$work/$name.log" "relay $name" "$!"
}
start_relay a; url_a=$url
start_relay b; url_b=$url

echo "== live check: relay A of the cluster $url_a"
bash "$shared/tools/live-check.sh" "$url_a" --token T --evict
echo "== live check: relay B of the cluster $url_b"
bash "$shared/tools/live-check.sh" "$url_b" --token T --evict
echo "== the Python SDK's smoke.py against relay B"
AEP_RELAY="$url_b" AEP_TOKEN=T python3 "$shared/reference/python-sdk/tests/smoke.py"
