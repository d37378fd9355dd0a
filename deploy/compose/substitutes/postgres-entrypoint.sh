#!/bin/sh
# The official postgres image's entrypoint, as far as deploy/compose uses it: on an empty
# PGDATA, initdb with POSTGRES_USER and POSTGRES_PASSWORD (password authentication for
# every host), the database POSTGRES_DB, then every /docker-entrypoint-initdb.d/*.sql
# against it; then PostgreSQL itself, listening on every address, as the postgres user.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  password=$(mktemp)
  printf '%s' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}" >"$password"
  chown postgres "$password"
  as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$password" --auth-local=trust \
    --auth-host=scram-sha-256 >/dev/null
  rm -f "$password"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    as_postgres psql -q -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  for script in /docker-entrypoint-initdb.d/*.sql; do
    [ -e "$script" ] || continue
    echo "postgres: running $script"
    as_postgres psql -q -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -f "$script"
  done
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
[ "${1:-}" = postgres ] && shift
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*' "$@"
