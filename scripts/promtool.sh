#!/usr/bin/env bash
# Makes sure promtool is installed for the alert-rule tests (test/unit/alert-rules.test.ts),
# which run `promtool check rules` and `promtool test rules` on deploy/prometheus. When it is
# missing, Debian's `prometheus` package (which ships promtool) is installed with apt-get if we
# run as root; otherwise this stops with a message saying how to install it. PROMTOOL points
# elsewhere if needed.
set -euo pipefail

PROMTOOL="${PROMTOOL:-$(command -v promtool || echo /usr/bin/promtool)}"

say() { echo "[promtool] $*" >&2; }
die() { echo "[promtool] error: $*" >&2; exit 1; }

[[ -x $PROMTOOL ]] && exit 0

if [[ $PROMTOOL != /usr/bin/promtool ]]; then
  die "PROMTOOL=$PROMTOOL is not an executable file"
fi
if [[ $(id -u) -ne 0 ]]; then
  die "promtool is missing and the alert-rule tests need it; install it as root: apt-get install -y --no-install-recommends prometheus"
fi
command -v apt-get >/dev/null || die "promtool is missing and apt-get is not available; install Prometheus's promtool so that $PROMTOOL exists"
say "installing Debian's prometheus (for promtool) with apt-get"
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d keeps the package from starting a Prometheus server on this machine.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.idmint && chmod +x /usr/sbin/policy-rc.d.idmint
if [[ ! -e /usr/sbin/policy-rc.d ]]; then cp /usr/sbin/policy-rc.d.idmint /usr/sbin/policy-rc.d; trap 'rm -f /usr/sbin/policy-rc.d' EXIT; fi
rm -f /usr/sbin/policy-rc.d.idmint
apt-get install -y --no-install-recommends prometheus >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends prometheus >&2; } \
  || die "apt-get could not install prometheus"
[[ -x $PROMTOOL ]] || die "prometheus was installed but $PROMTOOL is still missing"
say "installed: $("$PROMTOOL" --version 2>&1 | head -1)"
