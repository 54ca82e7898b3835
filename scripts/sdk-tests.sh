#!/usr/bin/env bash
# The Python and TypeScript client libraries (clients/), checked and tested
# against a real `spool serve` built from this checkout, on the embedded store
# and on PostgreSQL ($DATABASE_URL). Installs what they need from the
# registries: pip into a venv under target/, `npm ci` in clients/typescript.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
cargo build --quiet -p spool-cli --bin spool
export SPOOL_BIN="$PWD/$target/debug/spool"

echo "-- python: ruff, mypy --strict, pytest"
venv="$target/sdk-venv"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -e "clients/python[dev]"
(
  cd clients/python
  "../../$venv/bin/ruff" check .
  "../../$venv/bin/ruff" format --check .
  "../../$venv/bin/mypy" --strict
  "../../$venv/bin/pytest" -q
)

echo "-- typescript: npm ci, tsc --noEmit, dist/ up to date, node --test"
(
  cd clients/typescript
  npm ci --no-audit --no-fund --loglevel=error
  npm run --silent typecheck
  # dist/ is committed so that `npm install ./clients/typescript` needs no build tools.
  npm run --silent check-dist
  npm test --silent
)
