#!/usr/bin/env bash
# The failover and fault tests again, beside two CPU burners this script starts and stops: the
# suite's promise is that it passes on a busy machine, and a failover that heals only when the
# machine is idle is a bug (a connection left in ioredis's final state after a Sentinel
# failover was found so). Run by .ci/run after `npm test`; also by hand:
#
#   bash scripts/busy-faults.sh [test files...]   (default: the files below)
#
# Each burner is a shell loop on one core; both are killed when the script ends, however it
# ends. The exit code is the test runner's.
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=(
  test/integration/sentinel-failover.test.ts
  test/integration/sentinel-switch-mid-connect.test.ts
  test/integration/redis-restart.test.ts
  test/integration/redis-failover.test.ts
  test/integration/network-faults.test.ts
  test/integration/process-pause.test.ts
  test/integration/worker-kill.test.ts
)
(($# > 0)) && FILES=("$@")

bash scripts/services.sh
BURNERS=()
stop_burners() { ((${#BURNERS[@]})) && kill "${BURNERS[@]}" 2>/dev/null || true; }
trap stop_burners EXIT
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  BURNERS+=($!)
done
echo "[busy-faults] two CPU burners running (pids ${BURNERS[*]}); load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" >&2
node --import tsx --test --test-concurrency=1 --test-timeout=180000 "${FILES[@]}"
