#!/usr/bin/env bash
# Runs the unit tests and a representative set of integration tests on Node 24; the same as
# `bash scripts/node-version.sh 24 [test files...]` (see there). NODE24_VERSION pins the version.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/node-version.sh" 24 "$@"
