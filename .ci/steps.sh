# Sourced by every step .ci/run schedules (.ci/schedule runs each as `bash -c`, this file
# first): the steps longer than a command line, each a function. A function returns its
# first failure itself (`|| return`): the steps run without errexit.
#
# shellcheck source=../scripts/lib/tools.sh
source scripts/lib/tools.sh

# within LIMIT COMMAND…: COMMAND, stopped after LIMIT seconds, saying so, inside a step
# (the schedule's limit stops the whole step; this, one command of it).
within() {
  local limit=$1 status=0
  shift
  timeout --kill-after=30 "$limit" "$@" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "CI: '$*' was still running after $limit s and was stopped" >&2
  fi
  return "$status"
}

# background COMMAND…: COMMAND at the lowest CPU priority, taking only the cores the other
# steps leave idle. `nice` alone does not do it: each step runs in a session of its own, and
# where the kernel groups a session's processes for the scheduler (autogroups,
# /proc/sys/kernel/sched_autogroup_enabled, on by default in Debian's kernels) a nice value
# only orders the processes of one session: a session at nice 19 still got as much CPU as the
# lints' (a clean clone's lints, beside the upgrade check's build, 760 s). So the session's
# group is set to nice 19 as well (/proc/self/autogroup), which raising needs no privilege.
background() {
  if [ -w /proc/self/autogroup ]; then echo 19 2>/dev/null >/proc/self/autogroup || true; fi
  nice -n 19 "$@"
}

# The toolchain's components, and the C libraries the build links (libpq, the PostgreSQL
# driver, and OpenSSL): needed before any cargo.
toolchain() {
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  tools_apt libpq-dev libssl-dev || return
  cargo --version
  node --version
}

postgres() {
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -h 127.0.0.1 -p 5432
}

# The one build: every test and every binary, the ci profile, in target/ci/; then its
# binaries copied to target/ci/bin/ ($WPDS_BIN_DIR), which the checks run.
build() {
  cargo test --workspace --profile ci --no-run --quiet || return
  mkdir -p target/ci/bin
  find target/ci -maxdepth 1 -type f -executable -exec cp -p {} target/ci/bin/ \;
}

# The lints, in target/ci/ before the build, which then finds their build scripts' runs
# (SQLite's and mimalloc's C) and proc-macros done: a clean clone on a two-core host reached
# the end of the build at 308 s so, against 351 s with the lints in a target directory of
# their own beside it. First the server's build as it ships: the workspace's build turns storage's
# test-support on (the tests and wpds-bench ask for it), the server ships without it; that
# build alone is clippy-clean and documented, so an item only tests should reach cannot be
# what the server leans on. Then clippy of every target, then rustdoc of every crate (broken
# or private links fail it).
lints() {
  cargo clippy -p wpds-storage -p wpds --lib --bins --profile ci -- -D warnings || return
  RUSTDOCFLAGS="-D warnings" cargo doc -p wpds-storage --no-deps --quiet --profile ci || return
  cargo clippy --workspace --all-targets --profile ci -- -D warnings || return
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet --profile ci
}

# The tests hand their databases to a reaper that drops them off their path and sweeps what
# a killed test process left (crates/test-databases, which also names them and tests the
# sweep). Each pass on PostgreSQL must leave none of them behind: that crate's own check.
test_databases_left() {
  "$WPDS_BIN_DIR/wpds-test-databases" left "$TEST_PG_URL"
}

# The README's test command on SQLite, as written (CI skips the trybuild test, its own step),
# each (operation, status) logged for the coverage check; then the one test that needs root
# (it mounts a tmpfs to fill; CI runs as root).
sqlite_tests() {
  WPDS_STATUS_LOG="$CI_DIR/status-sqlite" within 1800 bash -c "$README_SQLITE -- --skip $HANDLER_CONTRACT" || return
  within 300 cargo test --profile ci --test reliability -- --ignored full_disk
}

# The README's line for PostgreSQL, as written. Two tests per core: the pass's long tests
# mostly wait (a network silenced for 14 s, a database away for 13 s, a failover).
postgres_tests() {
  RUST_TEST_THREADS=$((2 * $(nproc))) WPDS_STATUS_LOG="$CI_DIR/status-postgres" within 1200 \
    bash -c "$README_POSTGRES --skip $HANDLER_CONTRACT" || return
  test_databases_left
}

# pooled_tests BINARY MODE: the black-box and fault tests behind the PgBouncer BINARY in
# transaction mode, the servers told WPDS_PG_POOLER=MODE (tests/reliability/pooler.rs starts
# its own pools of one with the same binary). The failover and point-in-time tests make their
# own PostgreSQL servers (no TEST_DATABASE_URL): they run in the pass on PostgreSQL. The
# template database is made on PostgreSQL itself. A pass on a port of its own, so that both
# pooled passes may run at once.
pooled_tests() {
  local url status=0 pool
  pool=$(mktemp -d)
  url=$(PGBOUNCER=$1 scripts/pgbouncer start "$pool" 0) || return
  PGBOUNCER=$1 WPDS_PG_POOLER=$2 TEST_DATABASE_URL="$url" TEST_DATABASE_DIRECT_URL="$TEST_PG_URL" within 900 \
    cargo test --profile ci --test api --test reliability -- --include-ignored --skip sqlite_only \
    --skip "$HANDLER_CONTRACT" --skip failover:: --skip point_in_time:: || status=$?
  PGBOUNCER=$1 scripts/pgbouncer stop "$pool"
  rm -rf "$pool"
  [ "$status" -ne 0 ] || test_databases_left || status=$?
  return "$status"
}

# Behind a current PgBouncer: the README's block for it ("Test it"), run as written.
current_pgbouncer() {
  local block
  block=$(scripts/lib/readme-command --block README.md "export PGBOUNCER=\$(scripts/build-pgbouncer)   # or leave it unset for Debian's, with WPDS_PG_POOLER=transaction")
  within 900 bash -euo pipefail -c "$block" || return
  test_databases_left
}
