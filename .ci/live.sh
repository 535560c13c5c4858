#!/usr/bin/env bash
# The checks of .ci/run that run the built binaries against real peers: the corpus, the
# live checker against the Rust relay (alone and as a NATS fleet), the Python SDK's
# smokes, the control checks and interop, and the README's `aep` session with an `aep`
# that `cargo install` built. .ci/run runs this after the tests, while the lints take the
# cores it leaves idle: these checks spend their time waiting on sockets and ack windows.
# Every relay takes port 0. Needs
# ../shared beside the repository. Run alone, it builds the binaries first; .ci/run has
# built them already (AEP_CI_PREBUILT), and a build here would wait on the tests' lock.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
[ -n "${AEP_CI_PREBUILT:-}" ] || cargo build -q --workspace --bins --examples
export AEP_CI_PREBUILT=1
SHARED=$(cd ../shared && pwd)
source .ci/steps.sh
source .ci/relay-url.sh

# Everything started below is stopped on exit, whatever happened.
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  if [ -n "$STEP_NAME" ]; then step_report live; fi
}
trap cleanup EXIT

# `aep` installed by `cargo install` for the README's session (.ci/cli-session.sh): built
# apart (an install resolves aep-cli's features alone, so it shares little with the
# workspace's build) at the lowest priority, while the checks below wait on sockets.
AEP_ROOT=$(mktemp -d) INSTALL_LOG=$(mktemp)
nice -n 19 cargo install -q --debug --locked --path crates/aep-cli --root "$AEP_ROOT" \
  --target-dir target/ci-install > "$INSTALL_LOG" 2>&1 &
INSTALL_PID=$!; PIDS+=("$INSTALL_PID")

step "conformance corpus (run.py's 768 checks by name, plus projection)"
target/debug/aep-conformance

# The Rust relay binary, started on port 0; its first stdout line names its address.
RELAY_OUT=$(mktemp)
start_relay() {
  : > "$RELAY_OUT"
  target/debug/aep-relay --port 0 --host 127.0.0.1 "$@" > "$RELAY_OUT" 2> "$RELAY_OUT.log" &
  RELAY_PID=$!; PIDS+=("$RELAY_PID")
  relay_url "$RELAY_OUT" "$RELAY_OUT.log" aep-relay "$RELAY_PID"
  RELAY_URL=$url
}
stop_relay() { kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; }

step "live checker against the Rust relay (token, --evict, buffer 8)"
start_relay --token ci-token --buffer 8
"$SHARED/tools/live-check.sh" "$RELAY_URL" --token ci-token --evict
stop_relay

step "live checker against the Rust relay without a token (control-auth-gate)"
start_relay --buffer 8
"$SHARED/tools/live-check.sh" "$RELAY_URL" --evict
stop_relay

step "the Python SDK's relay smokes against the Rust relay"
start_relay --token sdk-smoke-token
AEP_RELAY="$RELAY_URL" AEP_TOKEN=sdk-smoke-token python3 "$SHARED/reference/python-sdk/tests/smoke.py"
# smoke_aio's "capture param down-levels delivered events" expects `data` removed whole,
# which only the annotation-free test fixture of the reference relay does; the reference
# relay as reference-relay.sh runs it (schema annotations loaded) fails it the same way.
set +e
AEP_RELAY="$RELAY_URL" AEP_TOKEN=sdk-smoke-token python3 "$SHARED/reference/python-sdk/tests/smoke_aio.py" > "$RELAY_OUT.aio" 2>&1
set -e
cat "$RELAY_OUT.aio"
if grep '^FAIL' "$RELAY_OUT.aio" | grep -v 'capture param down-levels delivered events'; then
  echo "smoke_aio: unexpected failure"; exit 1
fi
stop_relay

step "relay cluster: live checker against each of two relays on one nats-server (--buffer 8), smoke.py"
bash .ci/cluster-live.sh

step "control: live checks, Rust ControlTarget through the Rust relay and the reference relay"
bash .ci/control-live.sh

step "control: cross-SDK proof with the Python SDK through the reference relay"
bash .ci/control-interop.sh

step "control: live checks through a relay cluster, commands to relay A, the target on relay B"
bash .ci/cluster-control-live.sh

step "aep: installed by cargo install, the README's session against its own relay"
if ! wait "$INSTALL_PID"; then cat "$INSTALL_LOG"; echo "cargo install --path crates/aep-cli failed"; exit 1; fi
AEP_INSTALLED="$AEP_ROOT/bin/aep" bash .ci/cli-session.sh

step_report live
printf '\nlive: all passed\n'
