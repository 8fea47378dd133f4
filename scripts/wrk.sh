#!/usr/bin/env bash
# Makes sure wrk (the C HTTP load generator) is installed for the HTTP benchmark under wrk
# (bench/wrk.ts, `npm run bench:wrk`): a load generator that is not the limit of what it
# measures. When it is missing, Debian's `wrk` package is installed with apt-get if we run as
# root; otherwise this stops with a message saying how to install it. WRK points elsewhere if
# needed. Prints nothing when wrk is already there.
set -euo pipefail

WRK="${WRK:-$(command -v wrk || echo /usr/bin/wrk)}"

say() { echo "[wrk] $*" >&2; }
die() { echo "[wrk] error: $*" >&2; exit 1; }

[[ -x $WRK ]] && exit 0

if [[ $WRK != /usr/bin/wrk ]]; then
  die "WRK=$WRK is not an executable file"
fi
if [[ $(id -u) -ne 0 ]]; then
  die "wrk is missing and bench:wrk needs it; install it as root: apt-get install -y --no-install-recommends wrk"
fi
command -v apt-get >/dev/null || die "wrk is missing and apt-get is not available; install wrk so that $WRK exists"
say "installing Debian's wrk with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends wrk >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends wrk >&2; } \
  || die "apt-get could not install wrk"
[[ -x $WRK ]] || die "wrk was installed but $WRK is still missing"
say "installed: $("$WRK" --version 2>&1 | head -1)"
