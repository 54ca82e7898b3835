#!/usr/bin/env bash
# Browser tests of the admin page, from a fresh machine: installs Debian's
# Chromium (and a font) and playwright-core when missing, builds the demo
# server, and runs e2e/admin.test.mjs with node's test runner. Exits
# non-zero on any failure. Screenshots land in docs/screenshots/ (or
# $SCREENSHOT_DIR).
set -euo pipefail

cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || missing+=(fonts-dejavu-core)
if ((${#missing[@]} > 0)); then
    sudo=""
    [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
    echo "e2e: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v node >/dev/null 2>&1 || { echo "e2e: node (>= 20) is required" >&2; exit 1; }
if [[ ! -f e2e/node_modules/playwright-core/package.json ]]; then
    (cd e2e && npm ci --no-audit --no-fund)
fi

cargo build --quiet -p spool-server --example admin_demo

exec node --test --test-concurrency=1 e2e/admin.test.mjs
