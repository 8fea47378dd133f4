#!/usr/bin/env bash
# Makes sure Chromium is installed for the browser tests (test/browser), which drive Debian's
# /usr/bin/chromium through playwright-core; no browser is downloaded by npm. When it is
# missing, Debian's package is installed with apt-get if we run as root; otherwise this stops
# with a message saying how to install it. CHROMIUM_PATH points elsewhere if needed.
set -euo pipefail

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"

say() { echo "[chromium] $*" >&2; }
die() { echo "[chromium] error: $*" >&2; exit 1; }

[[ -x $CHROMIUM ]] && exit 0

if [[ $CHROMIUM != /usr/bin/chromium ]]; then
  die "CHROMIUM_PATH=$CHROMIUM is not an executable file"
fi
if [[ $(id -u) -ne 0 ]]; then
  die "$CHROMIUM is missing and the browser tests need it; install it as root: apt-get install -y chromium"
fi
command -v apt-get >/dev/null || die "$CHROMIUM is missing and apt-get is not available; install Chromium so that $CHROMIUM exists"
say "installing Debian's chromium with apt-get (for the browser tests)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y chromium >&2 || { apt-get update >&2 && apt-get install -y chromium >&2; } \
  || die "apt-get could not install chromium"
[[ -x $CHROMIUM ]] || die "chromium was installed but $CHROMIUM is still missing"
say "installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
