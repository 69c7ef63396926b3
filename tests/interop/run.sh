#!/usr/bin/env bash
# Run the interop suite: setup, then node's test runner on every *.test.mjs here.
# Exits non-zero on any failure. The Rust build is the caller's job (cargo build);
# see README.md for the environment variables.
#   tests/interop/run.sh                      # all test files
#   tests/interop/run.sh compare.test.mjs     # only some
set -euo pipefail
cd "$(dirname "$0")"
bash ./setup.sh
# agent-app serve registers each app for a2app; keep that out of the real home.
A2APP_CONFIG_DIR="$(mktemp -d)"
export A2APP_CONFIG_DIR
trap 'rm -rf "$A2APP_CONFIG_DIR"' EXIT
files=("$@")
[[ ${#files[@]} -gt 0 ]] || files=(*.test.mjs)
# One file at a time: the machine has 2 cores, and each file starts its own servers.
# --test-timeout is only the default for tests that set none; every suite and test
# here sets its own bound, and every HTTP call and child start has a timeout too.
node --test --test-concurrency=1 --test-timeout=600000 "${files[@]}"
