# Sourced by the scripts that run a local group of Redis processes on loopback ports
# (redis-cluster.sh, redis-sentinel.sh), after they set HOST, DATA, BASE_FILE, CHOSEN and
# define say, die, use_base, our_pid and busy_port: what the two share.
#
#   cli PORT ARGS...        redis-cli on one of the group's ports
#   port_open PORT          something accepts connections on the port
#   seeds_of PORTS...       host:port,host:port,... of the ports
#   wait_ping PORT WHAT     wait up to 10 s for PONG, else the log's tail and die
#   kill_ours               stop the group's processes (TERM, then KILL after 5 s) and remove
#                           their data directories and, unless the base was chosen, BASE_FILE
#   free_base FIRST LAST VAR  when the ports of the current base are busy and none was chosen,
#                           the first base from FIRST to LAST (step 10) whose ports are free;
#                           dies naming the busy port and VAR when there is none
#
# shellcheck source=scripts/ensure-binary.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-binary.sh"

cli() { redis-cli -h "$HOST" -p "$1" --no-auth-warning "${@:2}"; }

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

seeds_of() { local IFS=,; local s=("${@/#/$HOST:}"); echo "${s[*]}"; }

wait_ping() {
  local i
  for ((i = 0; i < 100; i++)); do cli "$1" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
  tail -n 20 "$DATA/$1/redis.log" >&2
  die "$2 on port $1 did not start"
}

kill_ours() {
  local p pid i
  for p in "${PORTS[@]}"; do
    pid=$(our_pid "$p") || continue
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  done
  # Only this group's directories: another one (other ports) may share $DATA.
  for p in "${PORTS[@]}"; do rm -rf "${DATA:?}/$p"; done
  [[ $CHOSEN -eq 1 ]] || rm -f "$BASE_FILE"
  rmdir "$DATA" 2>/dev/null || true
}

free_base() {
  local busy b
  busy=$(busy_port)
  if [[ -n $busy && $CHOSEN -eq 0 ]]; then
    # Another program (or a group of another checkout) holds the default ports: take the next
    # free range, and remember it for the other commands.
    for ((b = $1; b <= $2; b += 10)); do
      use_base "$b"
      busy=$(busy_port)
      [[ -z $busy ]] && break
    done
  fi
  [[ -z $busy ]] || die "port $busy is in use by another process; choose other ports with $3"
  mkdir -p "$DATA"
  # An explicit base port is a group of its own: the remembered one stays.
  [[ $CHOSEN -eq 1 ]] || echo "$BASE" >"$BASE_FILE"
}
