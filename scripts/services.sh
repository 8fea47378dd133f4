#!/usr/bin/env bash
# Makes sure the Redis and MySQL/MariaDB servers idmint needs are reachable.
#
# For each of REDIS_URL (default redis://127.0.0.1:6379) and MYSQL_URL (default
# mysql://root@127.0.0.1:3306/idmint): when the port answers, nothing is done. When it does
# not and the host is this machine, a local server is started on that port with its data
# under .data/ in the project (Debian's redis-server / mariadb-server are installed with
# apt-get when missing and we run as root). A remote host that does not answer is an error.
# When a server can be neither reached nor started, the message says what idmint needs and the
# three ways to give it (the README's quickstart says the same).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA="${IDMINT_DATA_DIR:-$ROOT/.data}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
MYSQL_URL="${MYSQL_URL:-mysql://root@127.0.0.1:3306/idmint}"

say() { echo "[services] $*" >&2; }
die() { echo "[services] error: $*" >&2; exit 1; }

# host and port of a URL such as scheme://user:pass@host:port/path
url_host() { local r=${1#*://}; r=${r##*@}; r=${r%%/*}; r=${r%%\?*}; [[ $r == \[* ]] && { r=${r#[}; echo "${r%%]*}"; return; }; echo "${r%%:*}"; }
url_port() { local r=${1#*://}; r=${r##*@}; r=${r%%/*}; r=${r%%\?*}; r=${r##*]}; [[ $r == *:* ]] && echo "${r##*:}" || echo "$2"; }

is_local() { [[ $1 == 127.0.0.1 || $1 == localhost || $1 == ::1 ]]; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_port() { # host port seconds what logfile
  local i
  for ((i = 0; i < $3 * 10; i++)); do port_open "$1" "$2" && return 0; sleep 0.1; done
  [[ -f $5 ]] && tail -n 20 "$5" >&2
  die "$4 did not start listening on $1:$2 within $3 s (log: $5)"
}

# shellcheck source=scripts/ensure-binary.sh
source "$(dirname "${BASH_SOURCE[0]}")/ensure-binary.sh"

NEEDS="idmint needs Redis 6.2+ (maxmemory-policy noeviction) at REDIS_URL and MySQL 8 or MariaDB 10.6+ at MYSQL_URL. Without root, either:
  - run everything in Docker: docker compose up   (Redis, MySQL and idmint; no npm start needed), or
  - start just the two servers in Docker:
      docker run -d -p 127.0.0.1:6379:6379 redis:7-alpine --maxmemory-policy noeviction
      docker run -d -p 127.0.0.1:3306:3306 -e MYSQL_ROOT_PASSWORD=idmint mysql:8.4
    then: MYSQL_URL=mysql://root:idmint@127.0.0.1:3306/idmint npm start, or
  - point REDIS_URL and MYSQL_URL at servers you already have, e.g.
      REDIS_URL=redis://10.0.0.5:6379 MYSQL_URL=mysql://user:password@10.0.0.6:3306/idmint npm start"

ensure_redis() {
  local host port
  host=$(url_host "$REDIS_URL"); port=$(url_port "$REDIS_URL" 6379)
  port_open "$host" "$port" && return 0
  is_local "$host" || die "REDIS_URL points at $host:$port, which does not answer"
  ensure_binary redis-server redis-server "$NEEDS"
  mkdir -p "$DATA/redis-$port"
  say "starting redis-server on 127.0.0.1:$port (data in $DATA/redis-$port)"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$DATA/redis-$port" \
    --save '' --appendonly no --maxmemory-policy noeviction \
    --logfile "$DATA/redis-$port.log" --pidfile "$DATA/redis-$port.pid" >/dev/null
  wait_port 127.0.0.1 "$port" 10 redis-server "$DATA/redis-$port.log"
}

ensure_mysql() {
  local host port dir
  host=$(url_host "$MYSQL_URL"); port=$(url_port "$MYSQL_URL" 3306)
  port_open "$host" "$port" && return 0
  is_local "$host" || die "MYSQL_URL points at $host:$port, which does not answer"
  ensure_binary mariadbd mariadb-server "$NEEDS"
  ensure_binary mariadb-install-db mariadb-server "$NEEDS"
  dir="$DATA/mysql-$port"
  if [[ ! -d $dir/mysql ]]; then
    say "initialising a MariaDB data directory in $dir"
    mkdir -p "$dir"
    mariadb-install-db --no-defaults --datadir="$dir" --user="$(id -un)" --auth-root-authentication-method=normal \
      --skip-test-db >"$DATA/mysql-$port.install.log" 2>&1 || { tail -n 20 "$DATA/mysql-$port.install.log" >&2; die "mariadb-install-db failed"; }
  fi
  say "starting mariadbd on 127.0.0.1:$port (data in $dir)"
  nohup mariadbd --no-defaults --datadir="$dir" --port="$port" --bind-address=127.0.0.1 \
    --socket="$dir/mysqld.sock" --pid-file="$dir/mysqld.pid" --user="$(id -un)" \
    --innodb-buffer-pool-size=128M --skip-log-bin >"$DATA/mysql-$port.log" 2>&1 &
  wait_port 127.0.0.1 "$port" 60 mariadbd "$DATA/mysql-$port.log"
}

mkdir -p "$DATA"
ensure_redis
ensure_mysql
