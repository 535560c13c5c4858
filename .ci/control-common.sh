# Shared by .ci/control-live.sh and .ci/control-interop.sh: start relays and targets in
# the background, wait until they are ready, and stop every one of them on exit.
# The shared directory: AEP_SHARED, or ../shared beside the repository.
shared=${AEP_SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
[ -d "$shared/tools" ] || { echo "no shared tools at $shared/tools: set AEP_SHARED" >&2; exit 1; }
pids=()
logs=$(mktemp -d)
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT

# wait_for FILE TEXT [PID]: until FILE contains TEXT (30 s), else print it and fail;
# at once if process PID (when given) has exited.
wait_for() {
  for _ in $(seq 300); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || { echo "exited before writing '$2' to $1"; cat "$1" 2>/dev/null; return 1; }
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1:"; cat "$1"; return 1
}

# start_rust_relay TOKEN: sets $url.
start_rust_relay() {
  target/debug/aep-relay --port 0 --host 127.0.0.1 --token "$1" >"$logs/rust-relay.out" 2>"$logs/rust-relay.err" &
  pids+=($!)
  wait_for "$logs/rust-relay.out" "listening on"
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$logs/rust-relay.out" | head -1)
}

# start_reference_relay TOKEN: sets $url. On port 0, with the hook that writes the port
# the relay took (it prints the port it was given): nothing binds a port and releases it.
start_reference_relay() {
  NODE_OPTIONS="--require=$PWD/crates/aep-test-support/node/bound-port.cjs" \
    AEP_BOUND_PORT_FILE="$logs/ref-relay.port" \
    bash "$shared/tools/reference-relay.sh" 0 "$1" >"$logs/ref-relay.out" 2>&1 &
  pids+=($!)
  wait_for "$logs/ref-relay.port" "[0-9]" "$!" || { cat "$logs/ref-relay.out"; return 1; }
  url="http://127.0.0.1:$(cat "$logs/ref-relay.port")"
}

# start_rust_target URL TOKEN SESSION [target flags...]
start_rust_target() {
  local u=$1 t=$2 s=$3; shift 3
  target/debug/examples/target --url "$u" --token "$t" --session "$s" "$@" >"$logs/target-$s.out" 2>"$logs/target-$s.err" &
  pids+=($!)
  wait_for "$logs/target-$s.out" "holding session"
}
