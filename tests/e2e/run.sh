#!/usr/bin/env bash
# Browser tests of the kanban example and the /_/ dashboard: headless Debian
# Chromium driven by playwright-core, against the real `agent-app serve`.
#   tests/e2e/run.sh                    # setup (idempotent), then every *.test.mjs here
#   A2APP_BIN=path/to/agent-app tests/e2e/run.sh   # use a built binary (scripts/test does)
# Setup: Debian's `chromium` at /usr/bin/chromium (installed with apt-get when
# missing; needs root, as in CI), and `npm ci` for the pinned playwright-core,
# which drives that browser and downloads none of its own.
# Screenshots go to tests/e2e/out/. E2E_KEEP_TMP=1 keeps the server's temp dir.
set -euo pipefail
cd "$(dirname "$0")"

if [[ ! -x /usr/bin/chromium ]]; then
  echo "== installing Debian's chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# npm ci only when node_modules does not match the lock file.
if ! cmp -s package-lock.json node_modules/.a2app-lock 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.a2app-lock
fi

if [[ -z "${A2APP_BIN:-}" ]]; then
  (cd ../.. && cargo build --bin agent-app --bin a2app --quiet)
fi

files=("$@")
[[ ${#files[@]} -gt 0 ]] || files=(*.test.mjs)
# Every step has its own bound; this is only the default for anything that sets none.
exec node --test --test-concurrency=1 --test-timeout=300000 "${files[@]}"
