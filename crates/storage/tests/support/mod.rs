//! What the storage crate's test files share: scratch databases that disappear with the
//! test.

// Shared by every test file, and each uses part of it (an expectation would fail in some).
#![allow(dead_code, reason = "each test file uses part of this module")]

use diesel::pg::PgConnection;
use diesel::prelude::*;
use std::path::Path;
use wpds_test_databases::Reaper;

/// A scratch database's name or file, removed when dropped.
pub enum Cleanup {
    /// A SQLite file (and its WAL and shared memory).
    SqliteFile(std::path::PathBuf),
    /// A PostgreSQL database, handed to the process's reaper when dropped
    /// (`wpds-test-databases`, the naming every crate's tests and CI's leak check share).
    PgDatabase {
        /// The server's reaper.
        reaper: &'static Reaper,
        /// The scratch database.
        name: String,
    },
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        match self {
            Cleanup::SqliteFile(path) => remove_sqlite_files(path),
            Cleanup::PgDatabase { reaper, name } => reaper.bury(std::mem::take(name)),
        }
    }
}

/// The PostgreSQL server of `TEST_DATABASE_URL`, for a test that needs one. Such a test
/// carries `#[ignore = "needs PostgreSQL: …"]`, so `cargo test` reports it ignored, with the
/// reason; run with `--include-ignored` and no PostgreSQL named, it fails saying what to
/// set (never passes without having run).
pub fn require_postgres() -> String {
    std::env::var("TEST_DATABASE_URL").ok().filter(|url| url.starts_with("postgres")).expect(
        "this test needs PostgreSQL: set TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB \
         (it is ignored unless run with --include-ignored)",
    )
}

/// `postgres://…/postgres` with its database name replaced.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(base, query)| (base, Some(query)));
    let scheme_end = base.find("://").map_or(0, |at| at + 3);
    let host_end = base[scheme_end..].find('/').map_or(base.len(), |at| scheme_end + at);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// Creates an empty PostgreSQL database on the server `admin_url` names: its URL, and
/// what drops it.
pub fn scratch_postgres(admin_url: &str) -> (String, Cleanup) {
    let reaper = Reaper::of(admin_url);
    let name = reaper.name();
    let mut admin = PgConnection::establish(admin_url).expect("connect to TEST_DATABASE_URL");
    diesel::sql_query(format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .expect("create the test database");
    (with_database(admin_url, &name), Cleanup::PgDatabase { reaper, name })
}

/// Removes a SQLite database file and its WAL and shared-memory files, whichever exist.
pub fn remove_sqlite_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}
