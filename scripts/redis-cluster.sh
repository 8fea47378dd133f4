#!/usr/bin/env bash
# A local Redis Cluster for development and the cluster test run: 3 masters and 3 replicas,
# six redis-server processes on loopback ports.
#
#   bash scripts/redis-cluster.sh start    start it (or check the running one) and print the seeds
#   bash scripts/redis-cluster.sh stop     kill its processes and remove its data
#   bash scripts/redis-cluster.sh status   each node's role and cluster state; exit 1 unless healthy
#   bash scripts/redis-cluster.sh seeds    print the seeds only
#
# The seeds (host:port,...) are the only thing printed on stdout, for
# REDIS_CLUSTER_NODES=$(bash scripts/redis-cluster.sh seeds). Ports are
# REDIS_CLUSTER_BASE_PORT to base+5; each node also uses its cluster bus port, port + 10000.
# Without REDIS_CLUSTER_BASE_PORT, start takes 7101, or the first of 7111, 7121, ... 7191 whose
# ports are all free when another program holds them, and remembers it for the other commands. Data (nodes.conf, log, pid) lives under .data/redis-cluster/<port>/
# (IDMINT_DATA_DIR moves .data). Nothing is persisted: a stopped cluster starts empty.
# redis-server and redis-cli come from Debian's redis-server / redis-tools packages, installed
# with apt-get when missing (as root), as scripts/services.sh does.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA="${IDMINT_DATA_DIR:-$ROOT/.data}/redis-cluster"
BASE_FILE="$DATA/base"
if [[ -n ${REDIS_CLUSTER_BASE_PORT:-} ]]; then
  BASE=$REDIS_CLUSTER_BASE_PORT CHOSEN=1
elif [[ -f $BASE_FILE ]]; then
  BASE=$(<"$BASE_FILE") CHOSEN=0
else
  BASE=7101 CHOSEN=0
fi
HOST=127.0.0.1

say() { echo "[redis-cluster] $*" >&2; }
die() { echo "[redis-cluster] error: $*" >&2; exit 1; }

[[ $BASE =~ ^[0-9]+$ ]] && ((BASE >= 1024 && BASE + 5 <= 55535)) ||
  die "REDIS_CLUSTER_BASE_PORT must be a port from 1024 to 55530 (its bus ports are +10000), got \"$BASE\""
PORTS=()
use_base() {
  BASE=$1
  PORTS=()
  for ((i = 0; i < 6; i++)); do PORTS+=($((BASE + i))); done
}
use_base "$BASE"

# shellcheck source=scripts/redis-local.sh
source "$(dirname "${BASH_SOURCE[0]}")/redis-local.sh"

seeds() { seeds_of "${PORTS[@]}"; }

# The pid of our redis-server on a port: from its pid file, or, when that is gone, from a
# server on the port whose working directory is ours.
our_pid() {
  local f="$DATA/$1/redis.pid" pid dir
  if [[ -f $f ]]; then
    pid=$(<"$f")
  else
    dir=$(cli "$1" config get dir 2>/dev/null | sed -n 2p | tr -d '\r') || return 1
    [[ -n $dir && $dir == "$(realpath -m "$DATA/$1")" ]] || return 1
    pid=$(cli "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')
  fi
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null || return 1
  echo "$pid"
}

node_ok() { # port: answers, cluster_state:ok, knows all six nodes
  local info
  info=$(cli "$1" cluster info 2>/dev/null | tr -d '\r') || return 1
  grep -q '^cluster_state:ok$' <<<"$info" && grep -q '^cluster_known_nodes:6$' <<<"$info" &&
    grep -q '^cluster_slots_ok:16384$' <<<"$info"
}

healthy() {
  local p
  for p in "${PORTS[@]}"; do our_pid "$p" >/dev/null && node_ok "$p" || return 1; done
}

stop_nodes() {
  kill_ours
  rm -f "$DATA/create-$BASE.log"
}

start() {
  ensure_binary redis-server redis-server
  ensure_binary redis-cli redis-tools
  if healthy; then
    say "already running and healthy on ports ${PORTS[0]}-${PORTS[5]}"
    seeds
    return 0
  fi
  # Ours but not healthy (a half-made cluster, a node that died): start again from nothing.
  stop_nodes
  local p
  free_base 7101 7191 REDIS_CLUSTER_BASE_PORT
  for p in "${PORTS[@]}"; do
    mkdir -p "$DATA/$p"
    redis-server --daemonize yes --bind "$HOST" --port "$p" --dir "$DATA/$p" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 3000 \
      --save '' --appendonly no --maxmemory-policy noeviction --repl-diskless-sync-delay 0 \
      --logfile "$DATA/$p/redis.log" --pidfile "$DATA/$p/redis.pid" >/dev/null
  done
  for p in "${PORTS[@]}"; do wait_ping "$p" redis-server; done
  say "creating the cluster (3 masters, 3 replicas) on ports ${PORTS[0]}-${PORTS[5]}"
  redis-cli --cluster create "${PORTS[@]/#/$HOST:}" --cluster-replicas 1 --cluster-yes >"$DATA/create-$BASE.log" 2>&1 ||
    { tail -n 30 "$DATA/create-$BASE.log" >&2; die "redis-cli --cluster create failed (log: $DATA/create-$BASE.log)"; }
  local i
  for ((i = 0; i < 300; i++)); do healthy && break; sleep 0.1; done
  healthy || { for p in "${PORTS[@]}"; do say "$p: $(cli "$p" cluster info 2>&1 | tr -d '\r' | grep -E 'cluster_state|known_nodes' | tr '\n' ' ')"; done; die "the cluster did not reach cluster_state:ok within 30 s"; }
  # A replica can only take over once it has synced with its master: wait for every link.
  for ((i = 0; i < 300; i++)); do replicas_synced && break; sleep 0.1; done
  replicas_synced || die "the replicas did not sync with their masters within 30 s"
  say "cluster_state:ok on all six nodes, every replica in sync"
  seeds
}

# The first of this cluster's ports (or their bus ports) that something answers on.
busy_port() {
  local p
  for p in "${PORTS[@]}"; do
    port_open "$p" && { echo "$p"; return; }
    port_open $((p + 10000)) && { echo $((p + 10000)); return; }
  done
  return 0
}

# Three replicas, each with its link to its master up.
replicas_synced() {
  local p up=0
  for p in "${PORTS[@]}"; do
    cli "$p" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up' && up=$((up + 1))
  done
  [[ $up -eq 3 ]]
}

status() {
  local p role state ok=0
  for p in "${PORTS[@]}"; do
    if ! our_pid "$p" >/dev/null; then say "$HOST:$p  not running"; ok=1; continue; fi
    role=$(cli "$p" role 2>/dev/null | head -n 1 | tr -d '\r')
    state=$(cli "$p" cluster info 2>/dev/null | tr -d '\r' | grep '^cluster_state:' || true)
    say "$HOST:$p  ${role:-no answer}  ${state:-cluster_state:unknown}"
    node_ok "$p" || ok=1
  done
  [[ $ok -eq 0 ]] && seeds
  return $ok
}

case "${1:-}" in
  start) start ;;
  stop) stop_nodes; say "stopped; data removed" ;;
  status) status ;;
  seeds) seeds ;;
  *) die "usage: $0 start|stop|status|seeds" ;;
esac
