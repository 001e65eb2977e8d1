#!/usr/bin/env bash
# Starts a PostgreSQL server for the tests of rewindfs/adapters/postgres: Debian's PostgreSQL 15
# (installed if missing), its own cluster in a directory of its own (default /tmp/rewindfs-postgres),
# listening on a unix socket in that directory only (no TCP). It makes a role and a database for the
# tests, and a second role that may connect but not create anything (the missing-permissions test).
#
#   scripts/provision-postgres.sh [dir]        start (or find running) the server in dir; prints its URL
#   scripts/provision-postgres.sh stop [dir]   stops it
#
# Idempotent: a cluster already made is reused, a server already running is left running. The
# connection string is written to <dir>/url (the tests read it, or REWINDFS_POSTGRES_URL), and what
# a test needs to restart the server to <dir>/env (PGBIN, PGDATA, PGSOCKET, PGUSER_OS).
# PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user.
set -euo pipefail

command=start
if [[ "${1:-}" == stop ]]; then
  command=stop
  shift
fi
DIR=${1:-${REWINDFS_POSTGRES_DIR:-/tmp/rewindfs-postgres}}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
DATA="$DIR/data"
ROLE=rewindfs
PASSWORD=rewindfs
DATABASE=rewindfs
LIMITED_ROLE=rewindfs_limited

if [[ ! -x "$PGBIN/postgres" ]]; then
  if [[ $EUID -ne 0 ]]; then
    echo "provision-postgres: $PGBIN/postgres is missing; run as root to install Debian's postgresql" >&2
    exit 1
  fi
  echo "provision-postgres: installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi

# As root, everything the server touches belongs to `postgres` and its commands run as that user.
if [[ $EUID -eq 0 ]]; then
  OS_USER=postgres
  as_server() { runuser -u postgres -- "$@"; }
else
  OS_USER=$(id -un)
  as_server() { "$@"; }
fi

running() {
  [[ -f "$DATA/postmaster.pid" ]] && as_server "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

if [[ $command == stop ]]; then
  if running; then as_server "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; fi
  exit 0
fi

mkdir -p "$DIR"
if [[ $EUID -eq 0 ]]; then chown "$OS_USER" "$DIR"; fi
chmod 0755 "$DIR"

if [[ ! -f "$DATA/PG_VERSION" ]]; then
  as_server "$PGBIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=peer --auth-host=reject >/dev/null
  # The server's own superuser by peer; every other role by password (so a wrong one is refused).
  cat >"$DATA/pg_hba.conf" <<EOF
local all postgres peer map=server
local all all scram-sha-256
EOF
  printf 'server %s postgres\n' "$OS_USER" >"$DATA/pg_ident.conf"
  cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$DIR'
unix_socket_permissions = 0777
max_connections = 300
shared_buffers = 64MB
password_encryption = scram-sha-256
EOF
  if [[ $EUID -eq 0 ]]; then chown "$OS_USER" "$DATA/pg_hba.conf" "$DATA/pg_ident.conf"; fi
fi

if ! running; then
  as_server "$PGBIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -o "-k $DIR -c listen_addresses=''" -w -t 60 start >/dev/null
fi

psql_server() { as_server "$PGBIN/psql" -h "$DIR" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }
if [[ -z "$(psql_server -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" ]]; then
  psql_server -c "CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'"
fi
if [[ -z "$(psql_server -c "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")" ]]; then
  psql_server -c "CREATE DATABASE $DATABASE OWNER $ROLE"
fi
if [[ -z "$(psql_server -c "SELECT 1 FROM pg_roles WHERE rolname = '$LIMITED_ROLE'")" ]]; then
  psql_server -c "CREATE ROLE $LIMITED_ROLE LOGIN PASSWORD '$PASSWORD'"
fi
# It may connect and read what it is granted, never create a schema (the public schema neither).
psql_server -d "$DATABASE" -c "REVOKE CREATE ON DATABASE $DATABASE FROM PUBLIC; REVOKE CREATE ON SCHEMA public FROM PUBLIC" >/dev/null

URL="postgresql://$ROLE:$PASSWORD@localhost/$DATABASE?host=$DIR"
printf '%s\n' "$URL" >"$DIR/url"
cat >"$DIR/env" <<EOF
PGBIN=$PGBIN
PGDATA=$DATA
PGSOCKET=$DIR
PGUSER_OS=$OS_USER
EOF
echo "$URL"
