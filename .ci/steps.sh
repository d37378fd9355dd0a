# Sourced by .ci/step: the steps of .ci/steps.ninja that are more than one command. Each
# returns its first failure itself (`|| return`): .ci/step calls it on the left of `||`,
# where bash ignores errexit.
# shellcheck shell=bash
# shellcheck source=../scripts/lib/tools.sh
source scripts/lib/tools.sh

# The README's test passes skip tests/handler_contract.rs (trybuild): its step runs it on
# its own. Passed as arguments after the README's line ("$@" in readme_line), never glued
# into it.
handler_contract=a_handler_that_drifts_from_the_document_does_not_compile
# The passes on PostgreSQL: a test that needs PostgreSQL is #[ignore = "needs PostgreSQL:
# …"], so the SQLite pass reports it ignored and these include it; a test of SQLite alone
# is named …sqlite_only and runs in the SQLite pass only (tests/common/database.rs).
on_postgres=(-- --include-ignored --skip sqlite_only --skip "$handler_contract")

# readme_line LINE [ARG…]: runs the README's command whose first line is LINE, as written
# (scripts/lib/readme-command), with ARG… after it.
readme_line() {
  local line
  line=$(scripts/lib/readme-command README.md "$1") || return
  shift
  bash -euo pipefail -c "$line"' "$@"' readme "$@"
}

# The toolchain's parts and the C libraries every cargo step links (libpq: the PostgreSQL
# driver; OpenSSL).
toolchain() {
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  tools_apt libpq-dev libssl-dev || return
  cargo --version && node --version
}

# Debian's packages the checks run: openssl (check-tracing's certificates), prometheus
# (tests/operability/metrics.rs, check-monitoring), pgbouncer (the pass behind Debian's
# transaction pooler), haproxy (scripts/cluster), podman, runc, catatonit (a pod's init),
# CNI's dnsname plugin (names between containers), podman-compose and debootstrap (the
# images and deploy files), chromium (check-swagger-ui).
packages() {
  tools_apt openssl prometheus pgbouncer haproxy podman runc catatonit \
    golang-github-containernetworking-plugin-dnsname podman-compose debootstrap chromium
}

# PostgreSQL on 127.0.0.1:5432, and an orphan test database planted as a killed test
# process leaves one (named after backend pid 0, which no session has): the first pass on
# PostgreSQL must sweep it (tests/common/reaper.rs), and test_databases_left sees that it
# did. Planted afresh: one left by an earlier run must not fail this one.
postgres() {
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -h 127.0.0.1 -p 5432 || return
  psql -d "$TEST_PG_URL" -q -c "DROP DATABASE IF EXISTS wpds_test_0_orphan" \
    -c "CREATE DATABASE wpds_test_0_orphan"
}

# The workspace's build turns storage's test-support on (the tests and wpds-bench ask for
# it); the server ships without it. That build, alone: clippy-clean and documented, so an
# item only tests should reach cannot be what the server leans on.
# In target/lint/, with clippy and rustdoc of the workspace (.ci/steps.ninja says why).
shipped() {
  CARGO_TARGET_DIR=target/lint cargo clippy -p wpds-storage -p wpds --lib --bins --profile ci -- -D warnings || return
  CARGO_TARGET_DIR=target/lint RUSTDOCFLAGS="-D warnings" cargo doc -p wpds-storage --no-deps --quiet --profile ci
}

# The README's test command, as written; then the one test that needs root (it mounts a
# tmpfs to fill; CI runs as root).
sqlite_tests() {
  WPDS_STATUS_LOG=target/ci/status-sqlite readme_line "cargo test --workspace --profile ci" \
    -- --skip "$handler_contract" || return
  cargo test --profile ci --test reliability -- --ignored full_disk
}

# The README's line for PostgreSQL, as written, two tests per core: its long tests mostly
# wait (a network silenced for 14 s, a database away for 13 s, a failover).
postgres_tests() {
  RUST_TEST_THREADS=$((2 * $(nproc))) WPDS_STATUS_LOG=target/ci/status-postgres readme_line \
    "TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test --workspace --profile ci -- --include-ignored --skip sqlite_only" \
    --skip "$handler_contract"
}

# The black-box and fault tests behind Debian's PgBouncer 1.18 in transaction mode, the
# servers told WPDS_PG_POOLER=transaction (tests/reliability/pooler.rs starts its own pools
# of one with the same binary). The failover tests make their own PostgreSQL servers (no
# TEST_DATABASE_URL): they ran in the pass on PostgreSQL. The template database is made on
# PostgreSQL itself. Its directory is under /tmp, as the README's for the current one:
# PgBouncer runs as uid 65534, which a checkout under a closed home directory keeps out.
debian_pgbouncer_tests() {
  local dir=/tmp/wpds-pgbouncer-debian url status=0
  url=$(PGBOUNCER=pgbouncer scripts/pgbouncer start "$dir" 0) || return
  PGBOUNCER=pgbouncer WPDS_PG_POOLER=transaction TEST_DATABASE_URL="$url" TEST_DATABASE_DIRECT_URL="$TEST_PG_URL" \
    cargo test --profile ci --test api --test reliability "${on_postgres[@]}" --skip failover:: || status=$?
  scripts/pgbouncer stop "$dir"
  return "$status"
}

# Behind a current PgBouncer keeping prepared statements: the README's block for it ("Test
# it"), as written.
current_pgbouncer_tests() {
  local block
  block=$(scripts/lib/readme-command --block README.md \
    "export PGBOUNCER=\$(scripts/build-pgbouncer)   # or leave it unset for Debian's, with WPDS_PG_POOLER=transaction") || return
  bash -euo pipefail -c "$block"
}

# The tests hand their databases to a reaper that drops them off their path and sweeps what
# a killed test process left (tests/common/reaper.rs): once every pass on PostgreSQL is
# done, none is left, the planted orphan included.
test_databases_left() {
  local left
  left=$(psql -d "$TEST_PG_URL" -Atc \
    "SELECT string_agg(datname, ' ') FROM pg_database WHERE datname ~ '^wpds_test_[0-9]+_'") || return
  if [ -n "$left" ]; then
    echo "CI: test databases left behind: $left" >&2
    return 1
  fi
}
