# Sourced by the CI scripts that start a relay on port 0: its first stdout line names
# the address it took.
# relay_url OUT LOG WHAT PID: sets $url to the address on OUT's first line, waiting up to
# 20 s while process PID runs; else says that WHAT printed no address (or exited), prints
# LOG and exits 1.
relay_url() {
  url=
  for _ in $(seq 200); do
    url=$(head -n 1 "$1" | grep -o 'http://[^ ]*' || true)
    [ -n "$url" ] && return 0
    kill -0 "$4" 2>/dev/null || { echo "$3 exited before printing its address"; cat "$2"; exit 1; }
    sleep 0.1
  done
  echo "$3 printed no address"; cat "$2"; exit 1
}
