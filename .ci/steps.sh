# Sourced by .ci/run, .ci/lints.sh and .ci/live.sh: each step's wall time is printed when
# the next starts, and all of them by `step_report` (issue 30: a run stays under 20
# minutes on 2 cores; these say where it goes).
CI_START=$SECONDS STEP_START=$SECONDS STEP_NAME="" STEP_TIMES=()
step_done() {
  [ -n "$STEP_NAME" ] || return 0
  local took=$((SECONDS - STEP_START))
  STEP_TIMES+=("$(printf '%5ds  %s' "$took" "$STEP_NAME")")
  printf '<== %ds: %s\n' "$took" "$STEP_NAME"
}
step() { step_done; STEP_NAME="$*" STEP_START=$SECONDS; printf '\n==> %s\n' "$*"; }
# step_report TITLE: the times of this script's steps, and its whole wall time.
step_report() {
  step_done; STEP_NAME=""
  printf '\n%s: step times (total %ds):\n' "$1" "$((SECONDS - CI_START))"
  printf '%s\n' "${STEP_TIMES[@]}"
}
