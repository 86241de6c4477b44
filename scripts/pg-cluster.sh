#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests that run on PostgreSQL:
#
#   url=$(scripts/pg-cluster.sh start DIR)   # initdb into DIR, start it, print its URL
#   scripts/pg-cluster.sh stop DIR           # stop it (DIR can then be deleted)
#
# Debian's postgresql package provides initdb and pg_ctl (scripts/setup.sh's
# ensure_test_services installs it); they refuse to run as root, so as root
# they run as the `postgres` user. The server listens on a free loopback
# port, trusts local connections and skips fsync: it holds test data only.
set -euo pipefail
cmd=${1:?usage: pg-cluster.sh start|stop DIR}
dir=${2:?usage: pg-cluster.sh start|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "pg-cluster: PostgreSQL is not installed (scripts/setup.sh ensure_test_services installs it)" >&2; exit 1; }
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"
    as_owner "$bin/initdb" -D "$dir/data" --auth=trust --username=postgres -E UTF8 >/dev/null
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
    echo "postgres://postgres@127.0.0.1:$port"
    ;;
  stop)
    # Stopping a cluster that already stopped is not an error.
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    ;;
  *) echo "usage: pg-cluster.sh start|stop DIR" >&2; exit 2 ;;
esac
