//! A fresh database per test, shared by the `api` and `reliability` test targets (each
//! includes this file with `#[path]`).
//!
//! `TEST_DATABASE_URL` unset (or not PostgreSQL): a new SQLite file in the temp directory.
//! `TEST_DATABASE_URL=postgres://…/DB`: a new database on that server, created with the
//! URL's credentials. Either is removed when the [`TestDatabase`] is dropped: the file at
//! once, the database by the process's [`Reaper`], off the test's path (`DROP DATABASE`
//! costs PostgreSQL a checkpoint), over a direct connection to the server
//! (`TEST_DATABASE_DIRECT_URL`, when `TEST_DATABASE_URL` leads through a pooler).
//! `WPDS_PG_POOLER=transaction` (or `transaction-prepared`) says `TEST_DATABASE_URL` leads
//! through a transaction pooler (PgBouncer): servers started by the tests inherit it, and
//! [`pooler`] tells the in-process ones. Behind one that keeps prepared statements the
//! role's timeouts bound the servers' statements, so each database gets them as an
//! operator sets them ([`TestDatabase::bound_statements`]).
//!
//! [`TestDatabase::demo`] starts from a template, migrated and loaded with the demo fixture
//! once (per content of the migrations and the fixture, [`template_key`]): a copy of a file
//! on SQLite, `CREATE DATABASE … TEMPLATE` on PostgreSQL. The template is made over a direct
//! connection to the server (`TEST_DATABASE_DIRECT_URL`, when `TEST_DATABASE_URL` leads
//! through a pooler): PostgreSQL copies a template only while nobody is connected to it, and
//! a pooler keeps the connections it made.
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

use wpds_test_databases::Reaper;

/// One test's own database; removed on drop.
pub struct TestDatabase {
    /// The URL a server (or `wpds` command) uses to reach it.
    pub url: String,
    scratch: Scratch,
}

/// What to clean up when the test ends.
enum Scratch {
    SqliteFile(std::path::PathBuf),
    /// Handed to the [`Reaper`] when the test ends: dropped off the test's path.
    PostgresDatabase {
        admin_url: String,
        name: String,
        reaper: &'static Reaper,
    },
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

    /// A new database on the engine `TEST_DATABASE_URL` names, migrated and holding the demo
    /// fixture: a copy of the template (see the module's documentation).
    pub fn demo() -> Self {
        match postgres_url() {
            Some(admin_url) => {
                let template = postgres_template(&direct_url(&admin_url));
                Self::on_postgres_from(admin_url, Some(template))
            }
            None => {
                let database = Self::sqlite();
                let path = database.url.strip_prefix("sqlite://").expect("a SQLite URL");
                std::fs::copy(sqlite_template(), path).expect("the SQLite template is copied");
                database
            }
        }
    }

    /// A new database on the PostgreSQL server of `admin_url`.
    fn on_postgres(admin_url: String) -> Self {
        Self::on_postgres_from(admin_url, None)
    }

    /// A new database on the PostgreSQL server of `admin_url`, a copy of `template` if given
    /// (made on the server itself: `CREATE DATABASE` over a pooler reaches it too).
    fn on_postgres_from(admin_url: String, template: Option<&str>) -> Self {
        let reaper = Reaper::of(&direct_url(&admin_url));
        let name = reaper.name();
        let mut admin = diesel::PgConnection::establish(&admin_url).expect("TEST_DATABASE_URL is reachable");
        let from = template.map(|t| format!(" TEMPLATE {t}")).unwrap_or_default();
        diesel::sql_query(format!("CREATE DATABASE {name}{from}"))
            .execute(&mut admin)
            .expect("create a test database");
        let database = TestDatabase {
            url: database_url(&admin_url, &name),
            scratch: Scratch::PostgresDatabase { admin_url, name, reaper },
        };
        database.bound_statements(ROLE_STATEMENT_TIMEOUT);
        database
    }

    /// Behind a pooler that keeps prepared statements (`WPDS_PG_POOLER=transaction-prepared`),
    /// sets the role's timeouts in this database as docs/operations.md has an operator set
    /// them: `statement_timeout` to `statement` (at most the timeout of every server the test
    /// starts on it, which refuses a looser one) and `lock_timeout` to 50 ms. A server
    /// connection reads them when it opens: call it before any server reached the database.
    /// Nothing to do in any other run.
    pub fn bound_statements(&self, statement: std::time::Duration) {
        let Scratch::PostgresDatabase { admin_url, name, .. } = &self.scratch else { return };
        if pooler() == wpds_storage::Pooler::TransactionPrepared {
            set_role_timeouts(admin_url, name, statement);
        }
    }

    /// This database on the PostgreSQL server itself (`TEST_DATABASE_DIRECT_URL`'s, when
    /// `TEST_DATABASE_URL` leads through a pooler); its URL for SQLite.
    pub fn direct_url(&self) -> String {
        match &self.scratch {
            Scratch::PostgresDatabase { admin_url, name, .. } => database_url(&direct_url(admin_url), name),
            Scratch::SqliteFile(_) => self.url.clone(),
        }
    }

    /// The database name a PostgreSQL `url` ends in.
    pub fn name_of(url: &str) -> String {
        let (_, name) = url.rsplit_once('/').expect("a database URL ends in /DBNAME");
        name.split('?').next().unwrap_or(name).to_owned()
    }
}

/// Sets, from a session on the server of `url`, the timeouts of the current role in the
/// database `name` as docs/operations.md has an operator set them: `statement_timeout` to
/// `statement`, `lock_timeout` to 50 ms. A server connection reads them when it opens.
pub fn set_role_timeouts(url: &str, name: &str, statement: std::time::Duration) {
    let mut admin = diesel::PgConnection::establish(url).expect("the PostgreSQL server is reachable");
    for (setting, value) in [("statement_timeout", statement.as_millis()), ("lock_timeout", 50)] {
        diesel::sql_query(format!("ALTER ROLE CURRENT_USER IN DATABASE {name} SET {setting} = '{value}ms'"))
            .execute(&mut admin)
            .unwrap_or_else(|e| panic!("the role's {setting}: {e}"));
    }
}

/// The role's `statement_timeout` in each test database behind a pooler that keeps prepared
/// statements: the shortest database timeout of the servers the tests start (1 s,
/// tests/reliability's outage tests), but a test that starts one with a shorter timeout
/// sets its own ([`TestDatabase::bound_statements`]).
pub const ROLE_STATEMENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// `url` naming the database `name` instead.
fn database_url(url: &str, name: &str) -> String {
    let (server, _) = url.rsplit_once('/').expect("a database URL ends in /DBNAME");
    format!("{server}/{name}")
}

/// The PostgreSQL server itself, for the template: `TEST_DATABASE_DIRECT_URL`, or
/// `TEST_DATABASE_URL` when no pooler stands in between.
fn direct_url(test_url: &str) -> String {
    match std::env::var("TEST_DATABASE_DIRECT_URL") {
        Ok(url) => url,
        Err(_) if pooler() == wpds_storage::Pooler::None => test_url.to_owned(),
        Err(_) => panic!(
            "TEST_DATABASE_URL leads through a pooler (WPDS_PG_POOLER): set \
             TEST_DATABASE_DIRECT_URL=postgres://USER@HOST:PORT/DB to the PostgreSQL server itself, \
             where the template database is made"
        ),
    }
}

/// What the template holds, as a key to name it by: a hash of the demo fixture and of the
/// engine's migrations, so a changed migration or fixture makes a new template.
fn template_key(engine: &str) -> String {
    use std::hash::{Hash, Hasher};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut hasher = std::hash::DefaultHasher::new();
    std::fs::read_to_string(root.join("fixtures/demo.json")).expect("the demo fixture").hash(&mut hasher);
    let mut files = Vec::new();
    let mut dirs = vec![root.join("crates/storage/migrations").join(engine)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the migrations are listed") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() { dirs.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    for file in files {
        file.strip_prefix(root).expect("below the root").hash(&mut hasher);
        std::fs::read(&file).expect("a migration is read").hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

/// Migrates the database at `url` and loads the demo fixture into it, as the server and
/// `wpds seed` do.
fn migrate_and_load(url: &str) {
    let db = wpds_storage::Database::open(&wpds_storage::DbConfig {
        url: url.to_owned(),
        pool_size: 1,
        timeout: std::time::Duration::from_secs(30),
        sqlite_synchronous: wpds_storage::SqliteSynchronous::Normal,
        pooler: wpds_storage::Pooler::None,
        migrate: true,
    })
    .expect("the template database opens and migrates");
    let fixture = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json"))
        .expect("the demo fixture");
    wpds_storage::seed::load(&db, &fixture).expect("the demo fixture loads");
}

/// The SQLite template's file, made once per content ([`template_key`]) in the temp
/// directory: migrated and loaded in a scratch file, then written whole with `VACUUM INTO`
/// (no write-ahead log beside it) and moved into place, so a test process never copies a
/// half-made template.
fn sqlite_template() -> &'static std::path::Path {
    static TEMPLATE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("wpds-template-{}.sqlite3", template_key("sqlite")));
        if path.exists() {
            return path;
        }
        let scratch = TestDatabase::sqlite();
        migrate_and_load(&scratch.url);
        let made = path.with_extension(format!("{}.partial", uuid::Uuid::new_v4().simple()));
        let source = scratch.url.strip_prefix("sqlite://").expect("a SQLite URL");
        let mut conn = diesel::SqliteConnection::establish(source).expect("the scratch file opens");
        diesel::sql_query(format!("VACUUM INTO '{}'", made.display()))
            .execute(&mut conn)
            .expect("the template is written");
        std::fs::rename(&made, &path).expect("the template is moved into place");
        path
    })
}

/// The PostgreSQL template's name, made once per content ([`template_key`]) on the server of
/// `direct_url` (never through a pooler): under an advisory lock, so test processes running
/// at once make it once; made under a scratch name and renamed when complete, so no copy is
/// taken of a half-made template.
fn postgres_template(direct_url: &str) -> &'static str {
    static TEMPLATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let name = format!("wpds_template_{}", template_key("postgres"));
        let mut admin =
            diesel::PgConnection::establish(direct_url).expect("the PostgreSQL server is reachable");
        diesel::sql_query("SELECT pg_advisory_lock(7770647301)")
            .execute(&mut admin)
            .expect("the template lock");
        #[derive(diesel::QueryableByName)]
        struct Found {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            found: i64,
        }
        let exists =
            diesel::sql_query(format!("SELECT count(*) AS found FROM pg_database WHERE datname = '{name}'"))
                .get_result::<Found>(&mut admin)
                .expect("the catalogue is read")
                .found
                > 0;
        if !exists {
            let scratch = format!("{name}_partial");
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {scratch} WITH (FORCE)"))
                .execute(&mut admin)
                .expect("a half-made template is dropped");
            diesel::sql_query(format!("CREATE DATABASE {scratch}"))
                .execute(&mut admin)
                .expect("the template is made");
            migrate_and_load(&database_url(direct_url, &scratch));
            // Closes whatever connection of the loader's pool is still open.
            diesel::sql_query(format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{scratch}'"
            ))
            .execute(&mut admin)
            .expect("the loader's connections are closed");
            // A terminated backend leaves a moment later: the rename waits for it.
            let rename = format!("ALTER DATABASE {scratch} RENAME TO {name}");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while let Err(e) = diesel::sql_query(&rename).execute(&mut admin) {
                assert!(std::time::Instant::now() < deadline, "the template is not moved into place: {e}");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        diesel::sql_query("SELECT pg_advisory_unlock(7770647301)")
            .execute(&mut admin)
            .expect("the lock is let go");
        name
    })
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
/// (`WPDS_PG_POOLER`, read as the server reads it; its default when unset).
pub fn pooler() -> wpds_storage::Pooler {
    match std::env::var("WPDS_PG_POOLER") {
        Ok(value) => <wpds_storage::Pooler as clap::ValueEnum>::from_str(&value, false)
            .unwrap_or_else(|why| panic!("WPDS_PG_POOLER={value}: {why}")),
        Err(_) => wpds_storage::Pooler::default(),
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &mut self.scratch {
            Scratch::SqliteFile(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Scratch::PostgresDatabase { name, reaper, .. } => reaper.bury(std::mem::take(name)),
        }
    }
}
