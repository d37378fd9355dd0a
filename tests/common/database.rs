//! A fresh database per test, shared by the `api` and `reliability` test targets (each
//! includes this file with `#[path]`).
//!
//! `TEST_DATABASE_URL` unset (or not PostgreSQL): a new SQLite file in the temp directory.
//! `TEST_DATABASE_URL=postgres://…/DB`: a new database on that server, created with the
//! URL's credentials. Either is removed when the [`TestDatabase`] is dropped.
//! `WPDS_PG_POOLER=transaction` says `TEST_DATABASE_URL` leads through a transaction
//! pooler (PgBouncer): servers started by the tests inherit it, and [`pooler`] tells the
//! in-process ones.
//!
//! One way to skip: a test that needs PostgreSQL (or its server binaries) carries
//! `#[ignore = "needs PostgreSQL: …"]`, so `cargo test` reports it ignored, with the
//! reason, and `cargo test -- --include-ignored` with `TEST_DATABASE_URL` set runs it
//! ([`TestDatabase::postgres`] fails it, saying why, when that is not set). A test of SQLite
//! alone (or of no database at all, run once) uses [`TestDatabase::sqlite`] whatever the
//! engine of the run, and its name ends in `sqlite_only`, so the PostgreSQL pass leaves it
//! out with `--skip sqlite_only` instead of running it again.

// Shared by several test targets, each of which uses part of it (an expectation would
// fail in some).
#![allow(dead_code, reason = "each test target uses part of this module")]

use diesel::{Connection, RunQueryDsl};

/// One test's own database; removed on drop.
pub struct TestDatabase {
    /// The URL a server (or `wpds` command) uses to reach it.
    pub url: String,
    scratch: Scratch,
}

/// What to clean up when the test ends.
enum Scratch {
    SqliteFile(std::path::PathBuf),
    PostgresDatabase { admin_url: String, name: String },
}

impl TestDatabase {
    /// A new, empty database on the engine `TEST_DATABASE_URL` names (SQLite by default).
    pub fn fresh() -> Self {
        match postgres_url() {
            Some(admin_url) => Self::on_postgres(admin_url),
            None => Self::sqlite(),
        }
    }

    /// A new, empty PostgreSQL database for a test that needs one (and is ignored unless
    /// asked for); fails the test, saying what to set, when `TEST_DATABASE_URL` names no
    /// PostgreSQL server.
    pub fn postgres() -> Self {
        Self::on_postgres(require_postgres())
    }

    /// A new SQLite file, whatever `TEST_DATABASE_URL` says.
    pub fn sqlite() -> Self {
        let unique = uuid::Uuid::new_v4().simple().to_string();
        let path = std::env::temp_dir().join(format!("wpds-test-{unique}.sqlite3"));
        TestDatabase { url: format!("sqlite://{}", path.display()), scratch: Scratch::SqliteFile(path) }
    }

    /// A new database on the PostgreSQL server of `admin_url`.
    fn on_postgres(admin_url: String) -> Self {
        let name = format!("wpds_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = diesel::PgConnection::establish(&admin_url).expect("TEST_DATABASE_URL is reachable");
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .expect("create a test database");
        let (server, _) = admin_url.rsplit_once('/').expect("a database URL ends in /DBNAME");
        TestDatabase {
            url: format!("{server}/{name}"),
            scratch: Scratch::PostgresDatabase { admin_url, name },
        }
    }
}

/// The PostgreSQL server of `TEST_DATABASE_URL`, for a test that needs one (and is ignored
/// unless asked for): fails the test, saying what to set, when there is none.
pub fn require_postgres() -> String {
    postgres_url().expect(
        "this test needs PostgreSQL: set TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB \
         (it is ignored unless run with --include-ignored)",
    )
}

/// The PostgreSQL server of `TEST_DATABASE_URL`, if it names one.
fn postgres_url() -> Option<String> {
    std::env::var("TEST_DATABASE_URL").ok().filter(|url| url.starts_with("postgres"))
}

/// What stands between servers and the PostgreSQL of `TEST_DATABASE_URL`
/// (`WPDS_PG_POOLER`, as the server reads it).
pub fn pooler() -> wpds_storage::Pooler {
    match std::env::var("WPDS_PG_POOLER").as_deref() {
        Ok("transaction") => wpds_storage::Pooler::Transaction,
        _ => wpds_storage::Pooler::None,
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.scratch {
            Scratch::SqliteFile(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Scratch::PostgresDatabase { admin_url, name } => {
                if let Ok(mut admin) = diesel::PgConnection::establish(admin_url) {
                    let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut admin);
                }
            }
        }
    }
}
