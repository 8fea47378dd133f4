#!/usr/bin/env bash
# Makes sure wrk (the C HTTP load generator) is installed for the HTTP benchmark under wrk
# (bench/wrk.ts, `npm run bench:wrk`): a load generator that is not the limit of what it
# measures. When it is missing, Debian's `wrk` package is installed with apt-get if we run as
# root (scripts/ensure-binary.sh); otherwise this stops with a message saying how to install
# it. Prints nothing when wrk is already there.
set -euo pipefail

say() { echo "[wrk] $*" >&2; }
die() { echo "[wrk] error: $*" >&2; exit 1; }

# shellcheck source=scripts/ensure-binary.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-binary.sh"
ensure_binary wrk wrk "bench:wrk needs it"
