#!/usr/bin/env bash
# Cross-SDK control through the reference relay: the Python SDK's ControlClient commands
# the Rust ControlTarget (examples/target), and the Rust ControlClient (examples/control)
# commands a Python ControlTarget: accepted, nacked `unsupported`, rejected with a
# reason, and timed out, each seen on the sending side.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/control-common.sh
export PYTHONPATH="$shared/reference/python-sdk${PYTHONPATH:+:$PYTHONPATH}"
# .ci/run builds every binary once before its checks start (AEP_CI_PREBUILT); alone,
# this script builds them itself.
[ -n "${AEP_CI_PREBUILT:-}" ] || cargo build -q --workspace --bins --examples
start_reference_relay T

echo "== Python ControlClient -> Rust ControlTarget"
start_rust_target "$url" T rs-target --accepts resume,cancel --reject cancel=refused \
  --ignore x.interop.control.ignore
python3 .ci/control-interop/py_client.py "$url" T rs-target

echo "== Rust ControlClient -> Python ControlTarget"
python3 .ci/control-interop/py_target.py "$url" T py-target >"$logs/py-target.out" 2>&1 &
pids+=($!)
wait_for "$logs/py-target.out" ready
fail=0
# expect NAME WANT_RC JSON_CHECK TYPE [flags]: run examples/control, check exit and output.
expect() {
  local name=$1 want_rc=$2 check=$3; shift 3
  local out rc=0
  out=$(target/debug/examples/control --url "$url" --token T --session py-target "$@") || rc=$?
  if [ "$rc" = "$want_rc" ] && python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if ($check) else 1)" "$out"; then
    echo "PASS  rust->python $name: $out"
  else
    echo "FAIL  rust->python $name (exit $rc): $out"; fail=1
  fi
}
expect accepted 0 'd["type"] == "control.accepted"' resume
expect unsupported 1 'd["nack"]["reason"] == "unsupported" and not d["nack"]["synthesized"]' pause
expect rejected 1 'd["nack"]["reason"] == "refused" and d["nack"]["detail"] and not d["nack"]["synthesized"]' cancel
expect timeout 1 'd["nack"]["reason"] == "timeout" and d["nack"]["synthesized"]' x.interop.control.ignore \
  --ack-window-ms 300 --retries 1
exit $fail
