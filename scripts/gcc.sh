#!/usr/bin/env bash
# Makes sure gcc is installed for the UDP benchmark (`npm run bench:udp`), whose load generator
# is C built by the benchmark (bench/udp-client/): when gcc is missing, Debian's `gcc` package
# is installed with apt-get if we run as root (scripts/ensure-binary.sh); otherwise this stops
# with a message saying how to install it. Prints nothing when gcc is already there.
set -euo pipefail

say() { echo "[gcc] $*" >&2; }
die() { echo "[gcc] error: $*" >&2; exit 1; }

# shellcheck source=scripts/ensure-binary.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-binary.sh"
ensure_binary gcc gcc "bench:udp builds its C load generator with it"
