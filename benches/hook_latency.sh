#!/usr/bin/env bash
# Latency of `toolgate hook claude-code`, process start included, against a server on
# loopback: hyperfine runs the release binary with a real Claude Code payload on stdin
# and this script prints p50/p99 from hyperfine's per-run times. The floor is
# `toolgate --version` (process start and exit, no server call).
#
#   cargo build --release && benches/hook_latency.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-2000}
BIN=${BIN:-target/release/toolgate}
PAYLOAD=tests/data/hooks/claude_bash.json
DIR=$(mktemp -d /tmp/toolgate-hook-bench.XXXXXX)
"$BIN" serve --listen 127.0.0.1:0 --data-dir "$DIR/data" 2>"$DIR/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 100); do
  grep -q 'serving' "$DIR/serve.log" 2>/dev/null && break
  sleep 0.1
done
ADDR=$(sed -n 's/.*serving addr=\([0-9.:]*\).*/\1/p' "$DIR/serve.log" | head -1)
[ -n "$ADDR" ] || { echo "server did not start" >&2; cat "$DIR/serve.log" >&2; exit 1; }
export TOOLGATE_SERVER="http://$ADDR" TOOLGATE_TOKEN_FILE="$DIR/data/bootstrap-token"
# a hook takes its settings from its flags only, as `hook install` writes them
HOOK="$BIN hook claude-code --server http://$ADDR --token-file $DIR/data/bootstrap-token --team bench --user dev"
cat >"$DIR/team.yaml" <<'YAML'
team: bench
auto_run_controls:
  enabled: true
  allowed: ["npm test", "git status"]
  blocked: ["rm", "git push"]
  mcp_tool_allowlist: ["github:create_issue", "builtin:Read"]
YAML
"$BIN" admin apply -f "$DIR/team.yaml" >/dev/null
# the hook must really decide (an error would block fast and flatter the figure)
$HOOK <"$PAYLOAD" | grep -q '"permissionDecision":"ask"\|"permissionDecision":"allow"' \
  || { echo "the hook did not decide" >&2; $HOOK <"$PAYLOAD"; exit 1; }
hyperfine --style basic --warmup 50 --runs "$RUNS" \
  --export-json "$DIR/hook.json" "$HOOK < $PAYLOAD" >/dev/null
hyperfine --style basic --warmup 50 --runs "$RUNS" \
  --export-json "$DIR/floor.json" "$BIN --version" >/dev/null
python3 - "$DIR/hook.json" "$DIR/floor.json" <<'PY'
import json, sys
def stats(path):
    times = sorted(json.load(open(path))["results"][0]["times"])
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
    return {"runs": len(times), "p50_ms": round(pick(0.50), 2), "p99_ms": round(pick(0.99), 2),
            "max_ms": round(times[-1] * 1000, 2)}
print(json.dumps({"hook": stats(sys.argv[1]), "floor_version": stats(sys.argv[2])}))
PY
