#!/usr/bin/env bash
# The MCP interop suite against a real `agent-app serve` of examples/kanban:
#   1. the official conformance suite, 0.1.16 (legacy era) and 0.2.0-alpha.12
#      --requirements 2026-07-28, each with its checked-in exclusion list
#      (expected-failures-*.yml: only scenarios needing the suite's test_* fixtures);
#   2. the Python client mcp 2.3.0 in auto, legacy and 2026-07-28 modes;
#   3. the TypeScript SDK client 1.32.2 (legacy era, on the machine's Node 20);
#   4. the same two SDKs spawning `a2app mcp`, the gateway, over stdio.
# The Rust build is the caller's job. Env: A2APP_BIN (default target/debug/agent-app; a2app is
# taken from the same directory),
# A2APP_MCP_PORT (default 18590; the suite uses this one port of 18590-18599).
set -euo pipefail
cd "$(dirname "$0")"
bash ./setup.sh

bin=${A2APP_BIN:-$PWD/../../target/debug/agent-app}
port=${A2APP_MCP_PORT:-18590}
work=$(mktemp -d)
cp ../../examples/kanban/app.toml ../../examples/kanban/schema.json ../../examples/kanban/operations.json "$work/"
# The app registers in a config directory of this run's own, where the gateway finds it.
export A2APP_CONFIG_DIR="$work/config"
"$bin" serve "$work" --http "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ready=0
for _ in $(seq 100); do
  if .venv/bin/python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/api/health', timeout=1)" 2>/dev/null; then
    ready=1
    break
  fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [[ $ready != 1 ]]; then
  echo "run.sh: agent-app did not start on port $port" >&2
  cat "$work/serve.log" >&2
  exit 1
fi
token=$(cat "$work/.agent-token")

passed=0
failed=0
step() {
  local name=$1
  shift
  echo "== mcp: $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

# localhost, not 127.0.0.1: the DNS-rebinding scenario needs a localhost URL.
url="http://localhost:$port/mcp"
node22=.venv/bin/node
step "conformance 0.1.16" timeout 300 "$node22" node_modules/conformance-0.1.16/dist/index.js server \
  --url "$url" --expected-failures expected-failures-0.1.16.yml -o "$work/conformance-0.1.16"
step "conformance 0.2.0-alpha.12 (2026-07-28)" timeout 300 "$node22" node_modules/conformance-0.2.0-alpha.12/dist/index.js server \
  --url "$url" --requirements 2026-07-28 --expected-failures expected-failures-2026-07-28.yml -o "$work/conformance-0.2.0"
step "conformance 0.2.0-alpha.12 authorization (the OAuth server, this script approving)" timeout 300 \
  .venv/bin/python oauth_conformance.py "$node22" node_modules/conformance-0.2.0-alpha.12/dist/index.js \
  "http://localhost:$port" "$((port + 1))" "$work/conformance-authorization"
for mode in auto legacy 2026-07-28; do
  step "python mcp 2.3.0 ($mode)" timeout 120 .venv/bin/python python_client.py "http://127.0.0.1:$port/mcp" "$token" "$mode"
done
step "typescript sdk 1.32.2" timeout 120 node ts_client.mjs "http://127.0.0.1:$port/mcp" "$token"
a2app="$(dirname "$bin")/a2app"
for mode in auto legacy 2026-07-28; do
  step "gateway: python mcp 2.3.0 over stdio ($mode)" timeout 120 .venv/bin/python gateway_client.py "$a2app" "$A2APP_CONFIG_DIR" "$mode"
done
step "gateway: typescript sdk 1.32.2 over stdio" timeout 120 node gateway_ts_client.mjs "$a2app" "$A2APP_CONFIG_DIR"

echo "mcp: $passed passed, $failed failed"
[[ $failed == 0 ]]
