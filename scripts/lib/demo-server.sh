# Sourced by the contract-check scripts. `start_demo_server [POSTGRES_URL]` takes the server
# binary (scripts/lib/tools.sh's `wpds_binary`: CI's one build, else `cargo build --profile
# ci`), loads the demo fixture into a fresh database — SQLite, or with POSTGRES_URL (a
# server, e.g. postgres://postgres@127.0.0.1:5432/postgres) a database of its own there,
# made and dropped with psql — issues tokens with `wpds token issue`, starts `wpds serve` on
# a free loopback port and waits for /readyz. It exports:
#   WPDS                 the server binary
#   WPDS_BASE_URL        http://127.0.0.1:PORT
#   WPDS_DATABASE_URL    the database the server uses
#   WPDS_TOKEN           access token of user 9 (platform administrator, member of workspace 1)
#   WPDS_MEMBER_TOKEN    access token of user 5 (member of workspace 1)
#   WPDS_OUTSIDER_TOKEN  access token of user 7 (member of workspace 2 only)
#   WPDS_REFRESH_TOKEN   a refresh token of a login of user 5's own (spending it revokes no
#                        other token)
#   WPDS_SERVER_LOG      the server's log file
# and stops the server and removes its files (and database) when the calling script exits.

start_demo_server() {
  local root wpds postgres=${1:-}
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  # shellcheck source=tools.sh
  source "$root/scripts/lib/tools.sh"
  wpds=$(wpds_binary)
  WPDS=$wpds
  DEMO_WORKDIR=$(mktemp -d)
  local url="sqlite://$DEMO_WORKDIR/demo.sqlite3"
  if [[ -n $postgres ]]; then
    DEMO_PG_SERVER=$postgres
    DEMO_PG_DATABASE="wpds_demo_$$_$RANDOM"
    psql -q -d "$postgres" -c "CREATE DATABASE $DEMO_PG_DATABASE" >/dev/null
    url="${postgres%/*}/$DEMO_PG_DATABASE"
  fi
  WPDS_DATABASE_URL=$url
  DATABASE_URL="$url" "$wpds" seed "$root/fixtures/demo.json" >/dev/null
  local issue=(token issue --access-token-ttl "${WPDS_TEST_TOKEN_TTL:-7200}")
  WPDS_TOKEN=$(DATABASE_URL="$url" "$wpds" "${issue[@]}" --user 9 | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
  WPDS_MEMBER_TOKEN=$(DATABASE_URL="$url" "$wpds" "${issue[@]}" --user 5 | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
  WPDS_OUTSIDER_TOKEN=$(DATABASE_URL="$url" "$wpds" "${issue[@]}" --user 7 | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
  WPDS_REFRESH_TOKEN=$(DATABASE_URL="$url" "$wpds" "${issue[@]}" --user 5 | python3 -c 'import json,sys; print(json.load(sys.stdin)["refreshToken"])')
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  WPDS_BASE_URL="http://127.0.0.1:$port"
  WPDS_SERVER_LOG="$DEMO_WORKDIR/server.log"
  DATABASE_URL="$url" WPDS_BIND="127.0.0.1:$port" WPDS_LOG="${WPDS_LOG:-warn}" "$wpds" serve >"$WPDS_SERVER_LOG" 2>&1 &
  DEMO_SERVER_PID=$!
  trap stop_demo_server EXIT
  for _ in $(seq 1 100); do
    if curl -fsS "$WPDS_BASE_URL/readyz" >/dev/null 2>&1; then
      export WPDS WPDS_BASE_URL WPDS_DATABASE_URL WPDS_TOKEN WPDS_MEMBER_TOKEN WPDS_OUTSIDER_TOKEN \
        WPDS_REFRESH_TOKEN WPDS_SERVER_LOG
      return 0
    fi
    sleep 0.1
  done
  echo "the demo server did not become ready; its log:" >&2
  cat "$WPDS_SERVER_LOG" >&2
  return 1
}

stop_demo_server() {
  if [ -n "${DEMO_SERVER_PID:-}" ]; then
    kill "$DEMO_SERVER_PID" 2>/dev/null || true
    wait "$DEMO_SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "${DEMO_PG_DATABASE:-}" ]; then
    psql -q -d "$DEMO_PG_SERVER" -c "DROP DATABASE IF EXISTS $DEMO_PG_DATABASE WITH (FORCE)" >/dev/null || true
  fi
  [ -n "${DEMO_WORKDIR:-}" ] && rm -rf "$DEMO_WORKDIR"
}
