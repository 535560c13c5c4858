# Sourced by the CI scripts that need a nats-server with JetStream.
# start_nats DIR: starts one on a port of its own choosing (-p -1; nothing binds a port,
# releases it and hands it on), its store and log under DIR; sets $nats_url to the
# address it wrote to its ports file and $nats_pid, waiting up to 10 s; else prints its
# log and exits 1. The caller stops it.
start_nats() {
  nats-server -js -a 127.0.0.1 -p -1 -sd "$1/store" -ports_file_dir "$1" > "$1/nats.log" 2>&1 &
  nats_pid=$!
  nats_url=
  for _ in $(seq 100); do
    nats_url=$(grep -o 'nats://[^"]*' "$1"/nats-server_*.ports 2>/dev/null | head -n 1 || true)
    [ -n "$nats_url" ] && return 0
    kill -0 "$nats_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$nats_pid" 2>/dev/null || true
  echo "nats-server wrote no ports file"; cat "$1/nats.log"; exit 1
}
