//! The database: engine chosen from the URL, an r2d2 pool, embedded migrations.
//!
//! `sqlite://PATH` (or a bare path) opens the embedded SQLite engine: bundled, WAL,
//! `busy_timeout` set before `journal_mode`, foreign keys on, `synchronous = FULL` unless
//! configured `NORMAL` ([`SqliteSynchronous`]).
//! `postgres://…` (or `postgresql://…`) opens PostgreSQL. Before the pool is built one
//! connection is made directly, so a bad URL or an unreachable server is reported with
//! its real cause at once instead of after r2d2's retries.
//!
//! On PostgreSQL the server also asks for shared connections ([`Database::share_statements`],
//! [`crate::shared_pg`]) on which single statements pipeline.
//!
//! On SQLite a [`Writer`] thread, with a connection of its own, runs the writes the server
//! hands it ([`Database::writer`]) in batches; the pool serves reads (see
//! [`crate::writer`]).

pub use crate::conn::DbConn;
use crate::error::StoreError;
use crate::lock_wait::{budget_spent, set_lock_wait, shortens};
use crate::network::with_network_timeouts;
use crate::shared_pg::SharedPg;
use crate::suspicion::Suspicion;
use crate::writer::{Writer, WriterPool};
use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use scheduled_thread_pool::ScheduledThreadPool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The PostgreSQL advisory lock held while migrating (any constant the service uses for
/// nothing else: "wpds" in ASCII).
const MIGRATION_LOCK: i64 = 0x7770_6473;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

/// The two engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The embedded default.
    Sqlite,
    /// For deployments with several server instances sharing one database.
    Postgres,
}

/// How to reach the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbConfig {
    /// `sqlite://PATH`, a bare path, or `postgres://…`.
    pub url: String,
    /// Connections in the pool.
    pub pool_size: u32,
    /// How long a request waits for a connection (and a new connection for the server)
    /// before the database counts as unavailable.
    pub timeout: Duration,
    /// How SQLite commits (ignored on PostgreSQL).
    pub sqlite_synchronous: SqliteSynchronous,
}

/// SQLite's `synchronous` setting: what a commit waits for before it counts as done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqliteSynchronous {
    /// `FULL` (2): every commit is synced to disk (one fsync of the WAL per commit, so per
    /// batch of the [`Writer`]) before it is acknowledged: an acknowledged write survives
    /// an operating-system crash or a power loss.
    #[default]
    Full,
    /// `NORMAL` (1): the WAL is synced only at checkpoints. A process crash loses nothing,
    /// but an operating-system crash or a power loss can roll back the last acknowledged
    /// writes (never corrupting the database).
    Normal,
}

impl SqliteSynchronous {
    /// The pragma's value.
    fn pragma(self) -> &'static str {
        match self {
            SqliteSynchronous::Full => "FULL",
            SqliteSynchronous::Normal => "NORMAL",
        }
    }
}

impl DbConfig {
    /// The engine `url` names.
    pub fn engine(&self) -> Engine {
        if self.url.starts_with("postgres://") || self.url.starts_with("postgresql://") {
            Engine::Postgres
        } else {
            Engine::Sqlite
        }
    }

    /// The SQLite file path of a `sqlite://PATH` or bare-path URL.
    fn sqlite_path(&self) -> &str {
        self.url.strip_prefix("sqlite://").or_else(|| self.url.strip_prefix("sqlite:")).unwrap_or(&self.url)
    }
}

enum Pools {
    Sqlite(Pool<ConnectionManager<SqliteConnection>>),
    Postgres(Pool<ConnectionManager<PgConnection>>),
}

/// The database behind the service.
pub struct Database {
    pools: Pools,
    engine: Engine,
    /// The URL as configured.
    url: String,
    timeout: Duration,
    writer: Option<Writer>,
    /// Whether a connection failed recently (see [`Database::release`]).
    suspicion: Arc<Suspicion>,
    /// On PostgreSQL, the shared connections single statements pipeline on, once the server
    /// asked for them ([`Database::share_statements`]).
    shared: Option<SharedPg>,
}

#[derive(Debug)]
struct SqlitePragmas {
    busy_timeout: Duration,
    synchronous: SqliteSynchronous,
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for SqlitePragmas {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        apply_sqlite_pragmas(conn, self.busy_timeout, self.synchronous)
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

#[derive(Debug)]
struct PostgresTimeouts {
    timeout: Duration,
}

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for PostgresTimeouts {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        // A row lock held elsewhere must not make a request wait without bound: after the
        // timeout the statement fails and the request answers 503, like SQLite's
        // busy_timeout. Nor may a statement that runs long (a slow server, a plan gone
        // wrong) hold its connection and its locks past any request's budget: a reachable
        // server cancels it, and the request answers 503 too.
        let millis = self.timeout.as_millis();
        conn.batch_execute(&format!("SET lock_timeout = {millis}; SET statement_timeout = {millis}"))
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// A pool builder for SQLite connections with the server's pragmas.
fn sqlite_pool_builder(config: &DbConfig) -> diesel::r2d2::Builder<ConnectionManager<SqliteConnection>> {
    Pool::builder().connection_timeout(config.timeout).test_on_check_out(false).connection_customizer(
        Box::new(SqlitePragmas { busy_timeout: config.timeout, synchronous: config.sqlite_synchronous }),
    )
}

/// What builds the [`Writer`]'s pool: one connection to `path`, opened on the first write,
/// never in the background. The writer builds a new pool to discard its connection after
/// a fault, so the pools share one thread for opening connections and have no reaper
/// (the writer holds its connection checked out): building one starts no thread.
fn writer_pools(path: &str, config: &DbConfig) -> Box<dyn Fn() -> WriterPool + Send> {
    let (path, config) = (path.to_owned(), config.clone());
    let threads = Arc::new(
        ScheduledThreadPool::builder()
            .num_threads(1)
            .thread_name_pattern("wpds-sqlite-writer-open-{}")
            .build(),
    );
    Box::new(move || {
        sqlite_pool_builder(&config)
            .max_size(1)
            .min_idle(Some(0))
            .idle_timeout(None)
            .max_lifetime(None)
            .thread_pool(Arc::clone(&threads))
            .build_unchecked(ConnectionManager::new(path.as_str()))
    })
}

/// `busy_timeout` first: switching to WAL itself needs the lock. `synchronous` is a
/// setting of the connection, not of the file: every connection gets it.
fn apply_sqlite_pragmas(
    conn: &mut SqliteConnection,
    busy: Duration,
    synchronous: SqliteSynchronous,
) -> diesel::QueryResult<()> {
    conn.batch_execute(&format!(
        "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = ON;",
        busy.as_millis(),
        synchronous.pragma()
    ))
}

impl Database {
    /// Connects (reporting the real cause of a failure), builds the pool and applies any
    /// pending migrations.
    pub fn open(config: &DbConfig) -> Result<Self, StoreError> {
        let database = Self::connect(config)?;
        database.migrate()?;
        Ok(database)
    }

    /// Connects and builds the pool without migrating.
    pub fn connect(config: &DbConfig) -> Result<Self, StoreError> {
        let engine = config.engine();
        let mut writer = None;
        let pools = match engine {
            Engine::Sqlite => {
                let path = config.sqlite_path();
                let mut probe = SqliteConnection::establish(path).map_err(|e| {
                    StoreError::Unavailable(format!("cannot open SQLite database {path}: {e}"))
                })?;
                apply_sqlite_pragmas(&mut probe, config.timeout, config.sqlite_synchronous).map_err(|e| {
                    StoreError::Unavailable(format!("cannot configure SQLite database {path}: {e}"))
                })?;
                writer = Some(Writer::start(writer_pools(path, config), config.timeout)?);
                let readers = sqlite_pool_builder(config).max_size(config.pool_size.max(1)).min_idle(None);
                Pools::Sqlite(readers.build_unchecked(ConnectionManager::new(path)))
            }
            Engine::Postgres => {
                let url = with_network_timeouts(&config.url, config.timeout);
                PgConnection::establish(&url).map_err(|e| {
                    StoreError::Unavailable(format!("cannot connect to PostgreSQL: {}", e.to_string().trim()))
                })?;
                let pool = Pool::builder()
                    .max_size(config.pool_size.max(1))
                    .connection_timeout(config.timeout)
                    .test_on_check_out(false)
                    .connection_customizer(Box::new(PostgresTimeouts { timeout: config.timeout }))
                    .build_unchecked(ConnectionManager::new(url));
                Pools::Postgres(pool)
            }
        };
        Ok(Database {
            pools,
            engine,
            url: config.url.clone(),
            timeout: config.timeout,
            writer,
            suspicion: Default::default(),
            shared: None,
        })
    }

    /// The SQLite writer thread, through which the server runs its writes; `None` on
    /// PostgreSQL, where writes run on pooled connections side by side.
    pub fn writer(&self) -> Option<&Writer> {
        self.writer.as_ref()
    }

    /// The pool's connections now: `(open, idle, most)`.
    pub fn pool_state(&self) -> (u32, u32, u32) {
        let (state, most) = match &self.pools {
            Pools::Sqlite(pool) => (pool.state(), pool.max_size()),
            Pools::Postgres(pool) => (pool.state(), pool.max_size()),
        };
        (state.connections, state.idle_connections, most)
    }

    /// The engine in use.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The configured timeout: the longest a connection checkout, and a statement's wait
    /// for a lock, may take (and, on PostgreSQL, any statement of a pooled connection).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A connection for work that may wait for the database at most `budget` in all: the
    /// checkout waits at most `budget`, and when less than the configured timeout (minus
    /// [`LOCK_WAIT_SLACK`]) is left after it, the connection's lock wait (SQLite
    /// `busy_timeout`, PostgreSQL `lock_timeout`) is shortened to what is left. The flag says
    /// it was shortened: pass the connection to [`Database::restore_lock_wait`] before
    /// returning it to the pool. While the pool is suspect (a connection failed within the
    /// last 30 s, [`crate::suspicion`]), each connection is verified with a trivial statement first and
    /// a dead one is closed and replaced. `Unavailable` when the budget is spent or no
    /// working connection comes in time.
    pub fn conn_within(&self, budget: Duration) -> Result<(DbConn, bool), StoreError> {
        if budget.is_zero() {
            return Err(budget_spent());
        }
        let started = Instant::now();
        let mut conn = loop {
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(budget_spent());
            }
            let mut conn = match &self.pools {
                Pools::Sqlite(pool) => DbConn::Sqlite(pool.get_timeout(left)?),
                Pools::Postgres(pool) => DbConn::Postgres(pool.get_timeout(left)?),
            };
            if !self.is_suspect() || verify(&mut conn) {
                break conn;
            }
            discard(&mut conn);
        };
        let left = budget.saturating_sub(started.elapsed());
        if !shortens(left, self.timeout) {
            return Ok((conn, false));
        }
        set_lock_wait(&mut conn, left)?;
        Ok((conn, true))
    }

    /// Hands a connection back after work. One whose work `failed` in the database (it
    /// may be broken), or that finished only after its request had given up (`late`: its
    /// state is not known), is closed instead of going back to the pool, and the pool
    /// turns suspect for 30 s ([`crate::suspicion`]): the other connections of an outage are verified
    /// before they are handed out again.
    pub fn release(&self, mut conn: DbConn, failed: bool, late: bool) {
        if failed || late {
            discard(&mut conn);
            self.suspicion.mark();
        }
    }

    /// Whether checkouts verify connections first.
    fn is_suspect(&self) -> bool {
        self.suspicion.is_suspect()
    }

    /// On PostgreSQL, opens the way for single statements to run on shared, pipelining
    /// connections ([`crate::shared_pg`]), `per_thread` on each thread that runs them (the
    /// server's workers). Returns why not when the URL has something tokio-postgres does not
    /// read as libpq does (then statements keep running on the blocking pool); nothing to do
    /// on SQLite.
    pub fn share_statements(&mut self, per_thread: usize) -> Result<(), String> {
        if self.engine != Engine::Postgres {
            return Ok(());
        }
        self.shared = Some(SharedPg::new(&self.url, self.timeout, per_thread, Arc::clone(&self.suspicion))?);
        Ok(())
    }

    /// The shared PostgreSQL connections for single statements, when they are in use.
    pub fn shared(&self) -> Option<&SharedPg> {
        self.shared.as_ref()
    }

    /// Puts a connection's lock wait back to the configured timeout (after
    /// [`Database::conn_within`] shortened it).
    pub fn restore_lock_wait(&self, conn: &mut DbConn) -> Result<(), StoreError> {
        set_lock_wait(conn, self.timeout)
    }

    /// A connection from the pool; `Unavailable` when none comes within the timeout.
    pub fn conn(&self) -> Result<DbConn, StoreError> {
        Ok(match &self.pools {
            Pools::Sqlite(pool) => DbConn::Sqlite(pool.get()?),
            Pools::Postgres(pool) => DbConn::Postgres(pool.get()?),
        })
    }

    /// Applies pending migrations (on PostgreSQL under an advisory lock, so instances
    /// starting together migrate one at a time) and provisions the server's secrets
    /// ([`crate::secrets::provision`]); returns the versions applied.
    pub fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn()?;
        let applied = match &mut conn {
            DbConn::Sqlite(c) => c.run_pending_migrations(SQLITE_MIGRATIONS).map(versions),
            DbConn::Postgres(c) => {
                // A migration may rewrite a large table: requests' statement timeout is not
                // its bound. The connection goes back to the pool with the timeout restored.
                // Instances starting together would each run the pending migrations and all
                // but one fail on what the first created: a session advisory lock lets one
                // migrate while the others wait, then find nothing pending.
                c.batch_execute(&format!(
                    "SET statement_timeout = 0; SELECT pg_advisory_lock({MIGRATION_LOCK})"
                ))?;
                let applied = c.run_pending_migrations(POSTGRES_MIGRATIONS).map(versions);
                c.batch_execute(&format!(
                    "SELECT pg_advisory_unlock({MIGRATION_LOCK}); SET statement_timeout = {}",
                    self.timeout.as_millis()
                ))?;
                applied
            }
        };
        let applied = applied.map_err(|e| StoreError::Internal(format!("migration failed: {e}")))?;
        crate::secrets::provision(&mut conn)?;
        Ok(applied)
    }

    /// Whether the database serves now (for `/readyz`, with a connection of the pool): a
    /// trivial query succeeds on `conn` and, on SQLite, the writer's last attempt to write
    /// succeeded. When it failed (a read-only file, a full disk, an I/O error), the writer
    /// makes an attempt that changes nothing (on a fresh connection; [`Writer::probe`]), so
    /// readiness returns by itself once the fault is lifted, even when no request writes,
    /// as when a balancer sends none to an unready server.
    pub fn ping(&self, conn: &mut DbConn) -> Result<(), StoreError> {
        if let Some(writer) = &self.writer
            && !writer.is_healthy()
        {
            writer.probe(Instant::now() + self.timeout)?;
        }
        crate::db_run!(conn => conn.batch_execute("SELECT 1")).map_err(StoreError::from)
    }
}

/// Whether `conn` answers a trivial statement.
fn verify(conn: &mut DbConn) -> bool {
    crate::db_run!(conn => conn.batch_execute("SELECT 1")).is_ok()
}

/// Marks `conn` broken, so the pool closes it when it is dropped instead of handing it out
/// again (r2d2 asks diesel whether a connection is broken; a transaction manager in error
/// says it is).
pub fn discard(conn: &mut DbConn) {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    match conn {
        DbConn::Sqlite(c) => {
            <AnsiTransactionManager as TransactionManager<SqliteConnection>>::transaction_manager_status_mut(
                c,
            )
            .set_in_error()
        }
        DbConn::Postgres(c) => {
            <AnsiTransactionManager as TransactionManager<PgConnection>>::transaction_manager_status_mut(c)
                .set_in_error()
        }
    }
}

fn versions(applied: Vec<diesel::migration::MigrationVersion<'_>>) -> Vec<String> {
    applied.iter().map(ToString::to_string).collect()
}
