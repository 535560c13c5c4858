#!/usr/bin/env bash
# The protocol's live checker against the Rust ControlTarget (examples/target) holding a
# session, through the Rust relay and through the reference relay: control-ack,
# control-nack-unsupported, control-dedupe and control-cancel (plus every relay check on
# the Rust relay).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/control-common.sh
# .ci/run builds every binary once before its checks start (AEP_CI_PREBUILT); alone,
# this script builds them itself.
[ -n "${AEP_CI_PREBUILT:-}" ] || cargo build -q --workspace --bins --examples
# The checker probes control.pause as the undeclared type, so the target leaves it out.
accepts=resume,cancel,attention.respond

start_rust_relay T
start_rust_target "$url" T live-rs --accepts "$accepts"
echo "== live check: Rust relay $url"
bash "$shared/tools/live-check.sh" "$url" --token T --control-session live-rs --control-cancel run-1

start_reference_relay T
start_rust_target "$url" T live-ref --accepts "$accepts"
echo "== live check (control): reference relay $url"
bash "$shared/tools/live-check.sh" "$url" --token T --control-session live-ref --control-cancel run-1 \
  --checks control-ack,control-nack-unsupported,control-dedupe,control-cancel
