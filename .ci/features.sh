#!/usr/bin/env bash
# Checks every feature combination the README documents, library by library, so a user
# who picks exactly those features gets a crate that compiles without a warning (a check
# is enough: the tests build the default and full sets). Clippy with `-D warnings`
# rather than `cargo check`, which would let a combination's dead code through; it
# lints only this workspace's crates. Run from anywhere; exits non-zero on the first
# combination that does not check cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

check() {
    local pkg=$1
    shift
    printf '==> %-26s %s\n' "$pkg" "${*:-(default features)}"
    cargo clippy -q -p "$pkg" --lib "$@" -- -D warnings
}

# The facade (`agenteventprotocol-sdk`, lib `aep`): the README's Cargo.toml lines.
sdk=agenteventprotocol-sdk
check $sdk                                                    # default: async + http, sse, ws, rustls
check $sdk --no-default-features                              # aep::core only (sans-IO)
check $sdk --no-default-features --features async             # JSONL emit, no network
check $sdk --no-default-features --features http,rustls       # an emitting agent (HTTP)
check $sdk --no-default-features --features ws,rustls         # an agent over WebSocket, a control target or console
check $sdk --no-default-features --features sse,rustls        # a consuming dashboard (SSE)
check $sdk --no-default-features --features sse,ws,rustls     # a dashboard that also sends commands
check $sdk --features blocking                                # a sync script (README)
check $sdk --no-default-features --features blocking,http,sse,rustls  # a lean sync script
check $sdk --no-default-features --features blocking,ws,rustls        # a sync agent with control
check $sdk --no-default-features --features http,sse,ws,native-tls    # the platform TLS instead of rustls
check $sdk --no-default-features --features testing           # test doubles only
check $sdk --features testing,relay                           # a test suite with an embedded relay
check $sdk --no-default-features --features relay             # an application embedding the relay
check $sdk --no-default-features --features bridge,rustls     # a bridge into OTLP, CloudEvents, OCSF
check $sdk --no-default-features --features bridge,native-tls  # the same on the platform TLS
check $sdk --no-default-features --features tracing,http,rustls  # an agent instrumented with tracing
check $sdk --all-features

# The crates underneath, for users who depend on them directly.
check aep-sdk-core
for f in http sse ws; do
    check aep-async --no-default-features --features "$f"
done
check aep-async --no-default-features
check aep-async --no-default-features --features http,sse,ws,native-tls
check aep-blocking --no-default-features
check aep-blocking --no-default-features --features http,sse
check aep-blocking --no-default-features --features ws
check aep-testing
check aep-testing --features relay
check aep-relay                                               # the binary's: command line (cli) and cluster (nats)
check aep-relay --no-default-features                         # embedded: no clap, no NATS client
check aep-relay --no-default-features --features cli          # a command line without the cluster
check aep-relay --no-default-features --features nats         # a cluster relay embedded, no clap
check aep-bridge                                              # the mappings and the exporters
check aep-bridge --no-default-features                        # the pure mappings only
check aep-bridge --no-default-features --features export,native-tls
check aep-tracing                                             # the layer
check aep-tracing --features otel                             # with traceparent from OpenTelemetry

printf '\nfeatures: every documented combination builds without a warning\n'
