//! A fresh database per test, shared by the `api` and `reliability` test targets (each
//! includes this file with `#[path]`).
//!
//! `TEST_DATABASE_URL` unset (or not PostgreSQL): a new SQLite file in the temp directory.
//! `TEST_DATABASE_URL=postgres://…/DB`: a new database on that server, created with the
//! URL's credentials. Either is removed when the [`TestDatabase`] is dropped.

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
        let unique = uuid::Uuid::new_v4().simple().to_string();
        match std::env::var("TEST_DATABASE_URL") {
            Ok(admin_url) if admin_url.starts_with("postgres") => {
                let name = format!("wpds_test_{unique}");
                let mut admin =
                    diesel::PgConnection::establish(&admin_url).expect("TEST_DATABASE_URL is reachable");
                diesel::sql_query(format!("CREATE DATABASE {name}"))
                    .execute(&mut admin)
                    .expect("create a test database");
                let (server, _) = admin_url.rsplit_once('/').expect("a database URL ends in /DBNAME");
                TestDatabase {
                    url: format!("{server}/{name}"),
                    scratch: Scratch::PostgresDatabase { admin_url, name },
                }
            }
            _ => {
                let path = std::env::temp_dir().join(format!("wpds-test-{unique}.sqlite3"));
                TestDatabase {
                    url: format!("sqlite://{}", path.display()),
                    scratch: Scratch::SqliteFile(path),
                }
            }
        }
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
