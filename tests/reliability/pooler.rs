//! Issue 44, point 3: every guarantee holds behind PgBouncer in transaction mode, shown on
//! a real PgBouncer with a pool of one server connection, so that each client (the server's
//! next request, or a client of the test's own) gets the server connection the last one
//! had, and anything left on it would be there to see.
//!
//! Each test starts its own PgBouncer (`scripts/pgbouncer`, `PGBOUNCER_POOL_SIZE=1`): the
//! binary `PGBOUNCER` names, else Debian's. The server's mode follows the version, as an
//! operator sets it: 1.21 or later keeps prepared statements (`WPDS_PG_POOLER=
//! transaction-prepared`, the role's timeouts set as docs/operations.md says), an older one
//! does not (`transaction`). CI runs them behind both generations.
//!
//! - a row or a table held by another session answers 503 `unavailable` with `Retry-After`
//!   within the request's budget, and a statement that runs long is cancelled by then;
//! - the next client of the server connection finds nothing a unit of work set, at once:
//!   the role's timeouts, no advisory lock, no statement prepared under a name of the
//!   server's own (a keeping PgBouncer's own, `PGBOUNCER_…`, are its business);
//! - what a refused call wrote (its audit entry) is kept, and its refused change is not;
//! - statements prepared before a migration still answer after it (PostgreSQL's "cached
//!   plan must not change result type" would fail them if the server selected `*`).

use crate::database::{TestDatabase, set_role_timeouts};
use crate::harness::{Seeded, Server, agent, issue_token, read_cell, timed_put_cell, wait_until};
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::sql_types::{BigInt, Text};
use diesel::{Connection, QueryableByName, RunQueryDsl};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The server's database timeout here: each request's budget for the database.
const BUDGET: Duration = Duration::from_millis(1000);
/// The role's `statement_timeout` (within the server's, as it requires), other than the
/// server's own so that a setting of the server's left on a session would show.
const ROLE_STATEMENT_TIMEOUT: Duration = Duration::from_millis(800);
/// What a loaded two-core machine may add to an answer beyond its budget: a whole budget
/// more. A server that did not keep its deadline would wait for the held lock, or the long
/// statement, until the test's client gives up (15 s), far past it.
const SLACK: Duration = BUDGET;
const PGBOUNCER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pgbouncer");
const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";
/// The demo platform administrator.
const ADMIN: &str = "9";

/// A PgBouncer with one server connection per database, in front of the test's PostgreSQL;
/// stopped, its directory removed, when dropped.
struct PoolOfOne {
    dir: PathBuf,
    /// The URL of the test's database through it.
    url: String,
    /// What the server is told stands in between (`WPDS_PG_POOLER`).
    mode: &'static str,
}

impl PoolOfOne {
    /// Starts one in front of the server of `direct` (a URL of the test's database on
    /// PostgreSQL itself, at 127.0.0.1).
    fn start(direct: &str) -> Self {
        let (server, name) = direct.rsplit_once('/').expect("a database URL");
        let upstream = server.rsplit_once(':').map_or("5432", |(_, port)| port);
        assert!(server.contains("@127.0.0.1"), "scripts/pgbouncer forwards to 127.0.0.1 only: {direct}");
        let version = run(Command::new(PGBOUNCER).arg("version"));
        let keeps_prepared = {
            let parts: Vec<u32> = version.trim().split('.').filter_map(|p| p.parse().ok()).collect();
            parts >= vec![1, 21]
        };
        let dir = std::env::temp_dir().join(format!("wpds-pool-of-one-{}", uuid::Uuid::new_v4().simple()));
        let pooler = run(Command::new(PGBOUNCER)
            .args(["start", &dir.to_string_lossy(), "0", upstream])
            .env("PGBOUNCER_POOL_SIZE", "1"));
        let url = format!("{}/{name}", pooler.trim().rsplit_once('/').expect("its URL").0);
        let mode = if keeps_prepared { "transaction-prepared" } else { "transaction" };
        PoolOfOne { dir, url, mode }
    }
}

impl Drop for PoolOfOne {
    fn drop(&mut self) {
        let _ = Command::new(PGBOUNCER).args(["stop", &self.dir.to_string_lossy()]).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `command`, failing the test unless it succeeds; its standard output.
fn run(command: &mut Command) -> String {
    let output = command.output().expect("the command runs");
    assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// A seeded database, a pool of one in front of it and a server behind that.
struct Pooled {
    seeded: Seeded,
    /// The database on PostgreSQL itself, for the test's own sessions.
    direct: String,
    pool: PoolOfOne,
    server: Server,
}

impl Pooled {
    fn start() -> Self {
        let seeded = Seeded::postgres();
        let direct = seeded.database.direct_url();
        // The role's timeouts, as docs/operations.md has an operator set them (the server
        // refuses to start behind a keeping pooler without them; elsewhere it sets its own
        // over them for each unit of work).
        set_role_timeouts(&direct, &TestDatabase::name_of(&direct), ROLE_STATEMENT_TIMEOUT);
        let pool = PoolOfOne::start(&direct);
        let timeout = BUDGET.as_millis().to_string();
        let server = Server::start_with(
            &pool.url,
            &[("WPDS_PG_POOLER", pool.mode), ("WPDS_DB_TIMEOUT_MS", &timeout), ("WPDS_DB_WAIT_SECONDS", "0")],
        );
        Pooled { seeded, direct, pool, server }
    }

    /// The demo member's cell on `date`, written (hours 1): its version now.
    fn written_cell(&self, date: &str) -> i64 {
        let version = read_cell(&agent(), &self.server.base, &self.seeded.token, date).version;
        let (answer, _) = timed_put_cell(&self.server.base, &self.seeded.token, date, "written", version);
        assert_eq!(answer.status, 200, "{}", answer.body);
        read_cell(&agent(), &self.server.base, &self.seeded.token, date).version
    }

    /// Asserts that a client of the pool's one server connection finds a clean session, and
    /// finds it at once: PgBouncer keeps a server connection whose transaction was left open
    /// with its client, so the next one would wait for it.
    fn assert_next_client_finds_a_clean_session(&self, after: &str) {
        let started = Instant::now();
        let mut client = PgConnection::establish(&self.pool.url).expect("a client through the pool of one");
        let found = diesel::sql_query(
            "SELECT current_setting('statement_timeout') AS statement_timeout, \
                    current_setting('lock_timeout') AS lock_timeout, \
                    (SELECT count(*) FROM pg_prepared_statements \
                      WHERE name NOT LIKE 'PGBOUNCER\\_%') AS named_statements, \
                    (SELECT count(*) FROM pg_locks \
                      WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS advisory_locks",
        )
        .get_result::<Session>(&mut client)
        .expect("the session's state");
        let took = started.elapsed();
        assert_eq!(
            found,
            Session {
                statement_timeout: "800ms".to_owned(), // ROLE_STATEMENT_TIMEOUT, as PostgreSQL shows it
                lock_timeout: "50ms".to_owned(),
                named_statements: 0,
                advisory_locks: 0,
            },
            "after {after}, the next client's session ({} mode)",
            self.pool.mode
        );
        assert!(took < BUDGET + SLACK, "after {after}, the next client waited {took:?} for the connection");
    }
}

/// What a client finds on a server connection.
#[derive(Debug, PartialEq, QueryableByName)]
struct Session {
    #[diesel(sql_type = Text)]
    statement_timeout: String,
    #[diesel(sql_type = Text)]
    lock_timeout: String,
    #[diesel(sql_type = BigInt)]
    named_statements: i64,
    #[diesel(sql_type = BigInt)]
    advisory_locks: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Runs `sql` from a session of the test's own on PostgreSQL itself.
fn admin(direct: &str, sql: &str) {
    let mut conn = PgConnection::establish(direct).expect("the test connects to PostgreSQL");
    conn.batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Statements of the database's sessions other than `own` that are running now.
fn active_statements(own: &mut PgConnection, name: &str) -> i64 {
    diesel::sql_query(format!(
        "SELECT count(*) AS n FROM pg_stat_activity \
          WHERE datname = '{name}' AND state = 'active' AND pid <> pg_backend_pid()"
    ))
    .get_result::<Count>(own)
    .expect("pg_stat_activity")
    .n
}

#[test]
#[ignore = "needs PostgreSQL and PgBouncer: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn behind_a_pool_of_one_a_held_row_or_table_answers_503_within_the_budget_and_the_next_client_is_served() {
    // Arrange
    let pooled = Pooled::start();
    let date = "2024-06-03";
    let holds = [
        "SELECT 1 FROM time_log_entries WHERE user_id = 5 AND entry_date = '2024-06-03' FOR UPDATE",
        "LOCK TABLE time_log_entries IN ACCESS EXCLUSIVE MODE",
    ];
    for hold in holds {
        let version = pooled.written_cell(date);
        let mut holder = PgConnection::establish(&pooled.direct).expect("the holder's session");
        holder.batch_execute(&format!("BEGIN; {hold}")).expect("the lock is taken");

        // Act
        let (answer, took) = timed_put_cell(&pooled.server.base, &pooled.seeded.token, date, "held", version);
        holder.batch_execute("ROLLBACK").expect("the lock is released");

        // Assert: refused as unavailable within the budget; then served as usual.
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (503, Some("unavailable")),
            "{hold}: {}",
            answer.body
        );
        assert!(answer.retry_after.is_some(), "{hold}: 503 without Retry-After");
        assert!(took < BUDGET + SLACK, "{hold}: the 503 took {took:?}");
        // The refused write's statement may still have been waiting in PostgreSQL when the
        // answer left (the answer keeps the request's deadline, the database its own lock
        // timeout) and commit once the lock is released: the next write takes the version
        // the cell has now.
        let version = read_cell(&agent(), &pooled.server.base, &pooled.seeded.token, date).version;
        let (after, _) = timed_put_cell(&pooled.server.base, &pooled.seeded.token, date, "after", version);
        assert_eq!(after.status, 200, "{hold}: the next write: {}", after.body);
        pooled.assert_next_client_finds_a_clean_session(hold);
    }
}

#[test]
#[ignore = "needs PostgreSQL and PgBouncer: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn behind_a_pool_of_one_a_statement_that_runs_long_is_cancelled_within_the_budget() {
    // Arrange: a write that the database makes last 5 s (a trigger that sleeps).
    let pooled = Pooled::start();
    let version = pooled.written_cell("2024-06-04");
    admin(
        &pooled.direct,
        "CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS \
           $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$; \
         CREATE TRIGGER slow_write BEFORE INSERT OR UPDATE ON time_log_entries \
           FOR EACH ROW EXECUTE FUNCTION slow_write()",
    );

    // Act
    let started = Instant::now();
    let (answer, took) =
        timed_put_cell(&pooled.server.base, &pooled.seeded.token, "2024-06-04", "slow", version);

    // Assert: 503 within the budget, and by then (give or take the slack) no statement of
    // the database is still running: PostgreSQL cancelled it, nothing left it running.
    assert_eq!((answer.status, answer.body["code"].as_str()), (503, Some("unavailable")), "{}", answer.body);
    assert!(answer.retry_after.is_some(), "503 without Retry-After");
    assert!(took < BUDGET + SLACK, "the 503 took {took:?}");
    let mut own = PgConnection::establish(&pooled.direct).expect("the test's session");
    let name = TestDatabase::name_of(&pooled.direct);
    let left = (BUDGET + SLACK).saturating_sub(started.elapsed()).max(Duration::from_millis(100));
    wait_until("the slow statement is cancelled", left, || active_statements(&mut own, &name) == 0);

    admin(&pooled.direct, "DROP TRIGGER slow_write ON time_log_entries");
    let (after, _) =
        timed_put_cell(&pooled.server.base, &pooled.seeded.token, "2024-06-04", "after", version);
    assert_eq!(after.status, 200, "the next write: {}", after.body);
    pooled.assert_next_client_finds_a_clean_session("a cancelled statement");
}

#[test]
#[ignore = "needs PostgreSQL and PgBouncer: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn behind_a_pool_of_one_what_a_refused_call_wrote_is_kept_and_its_refused_change_is_not() {
    // Arrange: company 205 of the demo was retired on 2026-06-30.
    let pooled = Pooled::start();
    let admin_token = issue_token(&pooled.seeded.database.url, ADMIN);
    let mut own = PgConnection::establish(&pooled.direct).expect("the test's session");
    let retired_at = |own: &mut PgConnection| {
        diesel::sql_query("SELECT retired_at AS n FROM global_companies WHERE id = 205")
            .get_result::<Count>(own)
            .expect("the company")
            .n
    };
    let retired_before = retired_at(&mut own);

    // Act: retiring it again is refused (its own transaction rolls back; the refusal's
    // audit entry commits on its own).
    let answer = agent()
        .post(format!("{}/admin/api/global-companies/205/retire", pooled.server.base))
        .header("authorization", format!("Bearer {admin_token}"))
        .send_json(serde_json::json!({"reason": "again"}))
        .expect("an answer");
    let status = answer.status().as_u16();

    // Assert
    assert_eq!(status, 409);
    let audited = diesel::sql_query(
        "SELECT count(*) AS n FROM audit_log \
          WHERE target = 'global_company:205' AND detail LIKE '%already_retired%'",
    )
    .get_result::<Count>(&mut own)
    .expect("the audit log");
    assert_eq!(audited.n, 1, "the refusal's audit entry is kept");
    assert_eq!(retired_at(&mut own), retired_before, "the refused retirement changed nothing");
    pooled.assert_next_client_finds_a_clean_session("a refused call");
}

#[test]
#[ignore = "needs PostgreSQL and PgBouncer: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn behind_a_pool_of_one_statements_prepared_before_a_migration_still_answer_after_it() {
    // Arrange: the server has run its hot statements (token, membership, the write, a page
    // of receipts), so a keeping pooler holds them prepared on its one server connection.
    let pooled = Pooled::start();
    let (base, token) = (&pooled.server.base, &pooled.seeded.token);
    let page = || {
        let mut response = agent()
            .get(format!("{base}{RECEIPTS}?limit=5"))
            .header("authorization", format!("Bearer {token}"))
            .call()
            .expect("an answer");
        let status = response.status().as_u16();
        (status, response.body_mut().read_json::<serde_json::Value>().unwrap_or_default())
    };
    let version = pooled.written_cell("2024-06-05");
    let before = page();
    assert_eq!(before.0, 200, "{}", before.1);
    if pooled.pool.mode == "transaction-prepared" {
        let mut client = PgConnection::establish(&pooled.pool.url).expect("a client through the pool of one");
        let kept = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE name LIKE 'PGBOUNCER\\_%'",
        )
        .get_result::<Count>(&mut client)
        .expect("the prepared statements");
        assert!(kept.n > 0, "PgBouncer keeps the server's statements prepared");
    }

    // Act: the next release's migration adds a column to every table (what an expanding
    // migration does while the old release still serves).
    admin(
        &pooled.direct,
        "DO $$ DECLARE t text; BEGIN \
           FOR t IN SELECT tablename FROM pg_tables \
                     WHERE schemaname = 'public' AND tablename <> '__diesel_schema_migrations' LOOP \
             EXECUTE format('ALTER TABLE %I ADD COLUMN added_by_next_release text', t); \
           END LOOP; END $$",
    );

    // Assert: the same calls answer as before.
    let (write, _) = timed_put_cell(base, token, "2024-06-05", "after the migration", version);
    assert_eq!(write.status, 200, "the write after the migration: {}", write.body);
    assert_eq!(page(), before, "the page of receipts after the migration");
    pooled.assert_next_client_finds_a_clean_session("a migration");
}
