#!/usr/bin/env bash
# The checks of .ci/run that read the code rather than run it: fmt, clippy, docs,
# cargo-deny, every documented feature combination, the packages. .ci/run starts this at
# the lowest priority while the test binaries and then the live checks run (most of
# that time is spent waiting on sockets and timers), so these fill the idle cores. Their builds are check builds, which
# share nothing with the tests' (a check compiles each dependency's metadata only), so
# they go to a target directory of their own (target/lint) and never wait for the
# tests' lock on target/. Run alone, it does the same.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never CARGO_TARGET_DIR=${AEP_LINT_TARGET:-target/lint}
source .ci/steps.sh
trap 'if [ -n "$STEP_NAME" ]; then step_report lints; fi' EXIT

# cargo-deny, when missing, is compiled from source (about 150 s optimised on 2 cores):
# without optimisation (it reads a lockfile and some manifests in well under a second
# either way), beside the lints, and awaited only when its step comes.
DENY_LOG=$(mktemp) DENY_PID=""
if ! command -v cargo-deny >/dev/null; then
  cargo install -q --debug --locked cargo-deny --target-dir target/ci-deny > "$DENY_LOG" 2>&1 &
  DENY_PID=$!
fi

step "fmt"
cargo fmt --all --check

step "clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "docs"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "feature combinations (every documented Cargo.toml line builds)"
bash .ci/features.sh

step "packages"
cargo package --no-verify -p aep-sdk-core -p aep-async -p aep-blocking -p aep-relay -p aep-testing -p aep-bridge -p aep-tracing -p aep-adapters -p agenteventprotocol-sdk -p aep-conformance -p aep-cli

step "cargo-deny (bans, licenses, sources; advisories need a network CI lacks)"
if [ -n "$DENY_PID" ] && ! wait "$DENY_PID"; then cat "$DENY_LOG"; echo "installing cargo-deny failed"; exit 1; fi
cargo deny check bans licenses sources

step_report lints
printf '\nlints: all passed\n'
