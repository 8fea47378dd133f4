#!/usr/bin/env bash
# A local Redis Sentinel group for development and the Sentinel failover test: a master, a
# replica and three sentinels (quorum 2) watching it, five processes on loopback ports.
#
#   bash scripts/redis-sentinel.sh start    start it (or check the running one) and print the sentinels
#   bash scripts/redis-sentinel.sh stop     kill its processes and remove its data
#   bash scripts/redis-sentinel.sh status   each server's role and what the sentinels see; exit 1 unless healthy
#   bash scripts/redis-sentinel.sh seeds    print the sentinels only
#   bash scripts/redis-sentinel.sh master   print the master's name (REDIS_SENTINEL_MASTER)
#
# The sentinels (host:port,...) are the only thing printed on stdout, for
# REDIS_SENTINELS=$(bash scripts/redis-sentinel.sh seeds) REDIS_SENTINEL_MASTER=idmint.
# Ports are REDIS_SENTINEL_BASE_PORT to base+4: the first master on base, its replica on
# base+1, the sentinels on base+2 to base+4. Without REDIS_SENTINEL_BASE_PORT, start takes
# 7401, or the first of 7411, 7421, ... 7491 whose ports are all free when another program
# holds them, and remembers it for the other commands. The sentinels mark a master down after
# 1 s without an answer (down-after-milliseconds 1000) and give a failover 5 s
# (failover-timeout 5000): short, for tests. Data (configs, logs, pids) lives under
# .data/redis-sentinel/<port>/ (IDMINT_DATA_DIR moves .data). Nothing is persisted: a stopped
# group starts empty. redis-server and redis-cli come from Debian's redis-server / redis-tools
# packages, installed with apt-get when missing (as root), as scripts/services.sh does.
#
# Passwords, both optional and read by every command: REDIS_SENTINEL_SERVER_PASSWORD is the
# master's and the replica's (requirepass and masterauth; the sentinels' auth-pass), what
# idmint is given in REDIS_URL; REDIS_SENTINEL_PASSWORD is the sentinels' own (requirepass of
# each sentinel), what idmint reads under the same name.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA="${IDMINT_DATA_DIR:-$ROOT/.data}/redis-sentinel"
BASE_FILE="$DATA/base"
MASTER_NAME=idmint
if [[ -n ${REDIS_SENTINEL_BASE_PORT:-} ]]; then
  BASE=$REDIS_SENTINEL_BASE_PORT CHOSEN=1
elif [[ -f $BASE_FILE ]]; then
  BASE=$(<"$BASE_FILE") CHOSEN=0
else
  BASE=7401 CHOSEN=0
fi
HOST=127.0.0.1

say() { echo "[redis-sentinel] $*" >&2; }
die() { echo "[redis-sentinel] error: $*" >&2; exit 1; }

[[ $BASE =~ ^[0-9]+$ ]] && ((BASE >= 1024 && BASE + 4 <= 65535)) ||
  die "REDIS_SENTINEL_BASE_PORT must be a port from 1024 to 65531, got \"$BASE\""
SERVERS=() SENTINELS=() PORTS=()
use_base() {
  BASE=$1
  SERVERS=("$BASE" $((BASE + 1)))
  SENTINELS=($((BASE + 2)) $((BASE + 3)) $((BASE + 4)))
  PORTS=("${SERVERS[@]}" "${SENTINELS[@]}")
}
use_base "$BASE"

# shellcheck source=scripts/redis-local.sh
source "$(dirname "${BASH_SOURCE[0]}")/redis-local.sh"

seeds() { seeds_of "${SENTINELS[@]}"; }

SERVER_PASSWORD=${REDIS_SENTINEL_SERVER_PASSWORD:-}
SENTINEL_PASSWORD=${REDIS_SENTINEL_PASSWORD:-}
for pw in "$SERVER_PASSWORD" "$SENTINEL_PASSWORD"; do
  [[ $pw =~ ^[A-Za-z0-9_.-]*$ ]] || die "REDIS_SENTINEL_SERVER_PASSWORD and REDIS_SENTINEL_PASSWORD may hold only [A-Za-z0-9_.-]"
done

# redis-cli on a port of the group, with the password of what listens there (redis-local.sh's
# cli without one). REDISCLI_AUTH keeps the password off the command line.
cli() {
  local pw=$SERVER_PASSWORD
  [[ " ${SENTINELS[*]} " == *" $1 "* ]] && pw=$SENTINEL_PASSWORD
  if [[ -n $pw ]]; then
    REDISCLI_AUTH=$pw redis-cli -h "$HOST" -p "$1" --no-auth-warning "${@:2}"
  else
    redis-cli -h "$HOST" -p "$1" --no-auth-warning "${@:2}"
  fi
}

# The pid of our redis-server (or sentinel) on a port, from its pid file.
our_pid() {
  local f="$DATA/$1/redis.pid" pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && grep -q redis-s "/proc/$pid/cmdline" 2>/dev/null || return 1
  echo "$pid"
}

# A field of `SENTINEL MASTER <name>` as a sentinel on port $1 sees it.
sentinel_field() {
  cli "$1" sentinel master "$MASTER_NAME" 2>/dev/null | tr -d '\r' | awk -v k="$2" 'prev == k { print; exit } { prev = $0 }'
}

# Every sentinel sees the master up (flags "master" only), one replica and the two other sentinels.
sentinels_agree() {
  local p
  for p in "${SENTINELS[@]}"; do
    [[ $(sentinel_field "$p" flags) == master ]] || return 1
    [[ $(sentinel_field "$p" num-slaves) == 1 ]] || return 1
    [[ $(sentinel_field "$p" num-other-sentinels) == 2 ]] || return 1
    # The replica is known and not down (its flags are "slave" only).
    [[ $(cli "$p" sentinel replicas "$MASTER_NAME" 2>/dev/null | tr -d '\r' | paste - - | awk -F'\t' '$1 == "flags" { print $2 }') == slave ]] || return 1
  done
  return 0
}

# The replica's link to the master is up.
replica_synced() {
  local p
  for p in "${SERVERS[@]}"; do
    cli "$p" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up' && return 0
  done
  return 1
}

healthy() {
  local p
  for p in "${PORTS[@]}"; do our_pid "$p" >/dev/null || return 1; done
  replica_synced && sentinels_agree
}

stop_all() { kill_ours; }

busy_port() {
  local p
  for p in "${PORTS[@]}"; do port_open "$p" && { echo "$p"; return; }; done
  return 0
}

start() {
  ensure_binary redis-server redis-server
  ensure_binary redis-cli redis-tools
  if healthy; then
    say "already running and healthy on ports ${PORTS[0]}-${PORTS[4]}"
    seeds
    return 0
  fi
  stop_all
  local p i
  free_base 7401 7491 REDIS_SENTINEL_BASE_PORT
  local master=${SERVERS[0]} replica=${SERVERS[1]}
  for p in "${SERVERS[@]}"; do
    mkdir -p "$DATA/$p"
    local args=(--daemonize yes --bind "$HOST" --port "$p" --dir "$DATA/$p" --save '' --appendonly no
      --maxmemory-policy noeviction --repl-diskless-sync-delay 0
      --logfile "$DATA/$p/redis.log" --pidfile "$DATA/$p/redis.pid")
    [[ $p == "$replica" ]] && args+=(--replicaof "$HOST" "$master")
    [[ -n $SERVER_PASSWORD ]] && args+=(--requirepass "$SERVER_PASSWORD" --masterauth "$SERVER_PASSWORD")
    redis-server "${args[@]}" >/dev/null
  done
  for p in "${SERVERS[@]}"; do wait_ping "$p" redis-server; done
  for ((i = 0; i < 300; i++)); do replica_synced && break; sleep 0.1; done
  replica_synced || die "the replica on port $replica did not sync with the master within 30 s"
  for p in "${SENTINELS[@]}"; do
    mkdir -p "$DATA/$p"
    # A sentinel rewrites its configuration file (what it learns): one file each.
    cat >"$DATA/$p/sentinel.conf" <<CONF
port $p
bind $HOST
daemonize yes
dir $DATA/$p
logfile $DATA/$p/redis.log
pidfile $DATA/$p/redis.pid
sentinel monitor $MASTER_NAME $HOST $master 2
sentinel down-after-milliseconds $MASTER_NAME 1000
sentinel failover-timeout $MASTER_NAME 5000
sentinel parallel-syncs $MASTER_NAME 1
CONF
    [[ -n $SERVER_PASSWORD ]] && echo "sentinel auth-pass $MASTER_NAME $SERVER_PASSWORD" >>"$DATA/$p/sentinel.conf"
    [[ -n $SENTINEL_PASSWORD ]] && echo "requirepass $SENTINEL_PASSWORD" >>"$DATA/$p/sentinel.conf"
    redis-server "$DATA/$p/sentinel.conf" --sentinel >/dev/null
  done
  for p in "${SENTINELS[@]}"; do wait_ping "$p" sentinel; done
  # Sentinels find the replica (through the master's INFO) and each other (through hello
  # messages on the master) within seconds.
  for ((i = 0; i < 300; i++)); do sentinels_agree && break; sleep 0.1; done
  sentinels_agree || die "the sentinels did not all see the master, its replica and each other within 30 s"
  say "master $HOST:$master, replica $HOST:$replica, sentinels on ports ${SENTINELS[0]}-${SENTINELS[2]} (master name $MASTER_NAME, quorum 2)"
  seeds
}

status() {
  local p ok=0
  for p in "${SERVERS[@]}"; do
    if ! our_pid "$p" >/dev/null; then say "$HOST:$p  not running"; ok=1; continue; fi
    say "$HOST:$p  $(cli "$p" role 2>/dev/null | head -n 1 | tr -d '\r')"
  done
  for p in "${SENTINELS[@]}"; do
    if ! our_pid "$p" >/dev/null; then say "$HOST:$p  sentinel not running"; ok=1; continue; fi
    say "$HOST:$p  sentinel: master at $(cli "$p" sentinel get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | tr -d '\r' | paste -sd:), flags $(sentinel_field "$p" flags)"
  done
  [[ $ok -eq 0 ]] && healthy && seeds && return 0
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop_all; say "stopped; data removed" ;;
  status) status ;;
  seeds) seeds ;;
  master) echo "$MASTER_NAME" ;;
  *) die "usage: $0 start|stop|status|seeds|master" ;;
esac
