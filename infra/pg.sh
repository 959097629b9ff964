#!/usr/bin/env bash
# pg.sh starts a throwaway PostgreSQL for development and tests from the
# system's own binaries (Debian's postgresql package), under .data/pg.
#
#   infra/pg.sh start   install if missing, init if new, start; print DATABASE_URL
#   infra/pg.sh url     print DATABASE_URL
#   infra/pg.sh stop    stop the server, keep the data
#   infra/pg.sh restart restart a running server (fast shutdown), or start it
#   infra/pg.sh wipe    stop the server and delete its data
#
# When DATABASE_URL is already set, start and url print it and do nothing else.
# Settings: GB_PG_PORT (default 54329), GB_PG_DIR (default <repo>/.data/pg).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
port=${GB_PG_PORT:-54329}
dir=${GB_PG_DIR:-$root/.data/pg}
# Postgres runs as the postgres user when we are root; if it cannot reach the
# repository (a checkout under /root, say), keep the cluster under /tmp.
if [ -z "${GB_PG_DIR:-}" ] && [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1 \
   && ! runuser -u postgres -- test -x "$root" 2>/dev/null; then
  dir=/tmp/gb-pg-$(printf '%s' "$root" | md5sum | cut -c1-8)
fi
data=$dir/data
sock=$dir/sock
log=$dir/server.log
url="postgres://gb@127.0.0.1:$port/gb?sslmode=disable"

say() { printf 'pg.sh: %s\n' "$*" >&2; }

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

install_pg() {
  if bindir >/dev/null; then return 0; fi
  say "PostgreSQL server binaries not found; installing Debian's postgresql package"
  if [ "$(id -u)" != 0 ]; then say "need root to apt-get install postgresql"; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bindir >/dev/null || { say "postgresql installed but pg_ctl not found"; exit 1; }
}

# as_owner runs a command as the user that owns the data directory: the
# current user, or "postgres" when running as root (Postgres refuses root).
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

running() { [ -f "$data/postmaster.pid" ] && as_owner "$(bindir)/pg_ctl" -D "$data" status >/dev/null 2>&1; }

start() {
  if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; return 0; fi
  install_pg
  local bin; bin=$(bindir)
  mkdir -p "$dir" "$sock"
  if [ "$(id -u)" = 0 ]; then
    chown -R postgres: "$dir"
    if ! runuser -u postgres -- test -w "$dir"; then
      say "$dir is not writable by the postgres user; set GB_PG_DIR to a directory it can use"; exit 1
    fi
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    say "initialising a new cluster in $data"
    as_owner "$bin/initdb" -D "$data" -U gb --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$sock'
max_connections = 300
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
CONF
  fi
  if ! running; then
    as_owner "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null || { tail -20 "$log" >&2; exit 1; }
  fi
  if ! as_owner "$bin/psql" -h "$sock" -p "$port" -U gb -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='gb'" | grep -q 1; then
    as_owner "$bin/createdb" -h "$sock" -p "$port" -U gb gb
  fi
  echo "$url"
}

stop() {
  if bindir >/dev/null && running; then
    as_owner "$(bindir)/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  fi
}

restart() {
  if bindir >/dev/null && running; then
    as_owner "$(bindir)/pg_ctl" -D "$data" -l "$log" -m fast -w -t 60 restart >/dev/null || { tail -20 "$log" >&2; exit 1; }
    echo "$url"
  else
    start
  fi
}

case "${1:-}" in
  start) start ;;
  restart) restart ;;
  url) if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; else echo "$url"; fi ;;
  stop) stop ;;
  wipe) stop; rm -rf "$dir"; say "wiped $dir" ;;
  *) echo "usage: infra/pg.sh start|url|stop|restart|wipe" >&2; exit 2 ;;
esac
