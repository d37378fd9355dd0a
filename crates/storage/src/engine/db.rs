//! The database: engine chosen from the URL, an r2d2 pool, embedded migrations.
//!
//! `sqlite://PATH` (or a bare path) opens the embedded SQLite engine: bundled, WAL,
//! `busy_timeout` set before `journal_mode`, foreign keys on, `synchronous = FULL` unless
//! configured `NORMAL` ([`SqliteSynchronous`]).
//! `postgres://…` (or `postgresql://…`) opens PostgreSQL. [`Database::open`] first makes
//! one connection directly, so a bad URL or an unreachable server is reported with its real
//! cause at once instead of after r2d2's retries; [`Database::build`] makes the pool without
//! connecting, and no work runs until [`Database::reach`] (or `reach_within`, which tries
//! again with backoff) has connected and migrated.
//!
//! On PostgreSQL the server also asks for shared connections ([`Database::share_statements`],
//! [`crate::engine::shared_pg`]) on which single statements pipeline.
//!
//! Behind a pooler that multiplexes transactions (PgBouncer's `pool_mode = transaction`,
//! [`Pooler::Transaction`]) a server connection is this server's only for one transaction,
//! so nothing relies on a session: statements are not kept prepared (diesel sends unnamed
//! ones), no setting is made for a session (each unit of work is one transaction that
//! begins with `SET LOCAL` of its timeouts), no shared connections (diesel-async always
//! prepares named statements), and migrations take a transaction's advisory lock.
//!
//! A pooler that also keeps protocol-level prepared statements across transactions
//! (PgBouncer 1.21 or later with `max_prepared_statements`, [`Pooler::TransactionPrepared`])
//! gives back what the session gave: statements stay prepared, and single statements
//! pipeline on shared connections, each its own implicit transaction (no `BEGIN`/`COMMIT`
//! around one statement). Still nothing is set for a session: the timeouts of a statement
//! outside a unit of work are the role's or the database's (`ALTER ROLE … SET`), which
//! [`Database::reach`] reads back and refuses, giving the commands to run, when they are
//! unset or looser than the server's; work of several statements is one transaction that
//! sets its own, as behind any transaction pooler.
//!
//! On SQLite a [`Writer`] thread, with a connection of its own, runs the writes the server
//! hands it ([`Database::writer`]) in batches; the pool serves reads (see
//! [`crate::engine::writer`]).

use crate::engine::batch::BatchObserver;
pub use crate::engine::conn::DbConn;
use crate::engine::lock_wait::{budget_spent, set_lock_wait, shortens};
use crate::engine::network::with_network_timeouts;
use crate::engine::pg_batcher::PgBatcher;
use crate::engine::shared_pg::{LOCK_WAIT, SharedPg};
use crate::engine::suspicion::Suspicion;
use crate::engine::throttled_log::{SharedLog, ThrottledLog, one_line};
use crate::engine::writer::{Writer, WriterPool};
use crate::error::StoreError;
use diesel::Connection;
use diesel::connection::CacheSize;
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use scheduled_thread_pool::ScheduledThreadPool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The PostgreSQL advisory lock held while migrating (any constant the service uses for
/// nothing else: "wpds" in ASCII).
const MIGRATION_LOCK: i64 = 0x7770_6473;

/// The longest a start-up waits for the migration lock (another instance is migrating): a
/// request's timeout would fail it behind one slow migration; no bound at all would hang it
/// behind a forgotten one. A migration's own statements then wait for a table's lock at most
/// the request timeout: an `ALTER TABLE` queued for a lock holds up every query of the
/// instances still serving (a rolling upgrade) behind it, so it gives up soon (the start-up
/// tries again, [`Database::reach_within`]) rather than stall them.
const MIGRATION_LOCK_WAIT: Duration = Duration::from_secs(60);

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

/// How to reach the database. Its [`Default`] is every setting's default, written here
/// only: the server's flags take theirs from [`DbConfig::DEFAULT_URL`] and
/// [`DbConfig::DEFAULT_TIMEOUT_MS`] and the enums' defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbConfig {
    /// `sqlite://PATH`, a bare path, or `postgres://…`.
    pub url: String,
    /// Connections in the pool; 0 is the engine's default ([`DbConfig::connections`]).
    pub pool_size: u32,
    /// How long a request waits for a connection (and a new connection for the server)
    /// before the database counts as unavailable.
    pub timeout: Duration,
    /// How SQLite commits (ignored on PostgreSQL).
    pub sqlite_synchronous: SqliteSynchronous,
    /// What stands between the server and PostgreSQL (ignored on SQLite).
    pub pooler: Pooler,
    /// Whether reaching the database applies pending migrations (`true`, the default), or
    /// only checks that none is pending and refuses the database while one is, naming them
    /// (`false`: migrations are a step of their own, `wpds migrate`). See
    /// `Database::reach`.
    pub migrate: bool,
}

/// How a database's migrations stand against this build's ([`Database::migration_status`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MigrationStatus {
    /// This build's migrations the database lacks, oldest first (`VERSION_NAME`).
    pub pending: Vec<String>,
    /// Versions the database holds that this build does not know: the schema is newer.
    pub unknown: Vec<String>,
}

/// What stands between the server and PostgreSQL: what a connection of the pool may rely on.
/// With the `cli` feature it is the value of the server's `--pg-pooler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Pooler {
    /// Nothing, or a pooler that gives the server a connection for as long as it keeps its
    /// own (PgBouncer's `pool_mode = session`): sessions are the server's, so statements stay
    /// prepared and the timeouts are set once per connection.
    #[default]
    #[cfg_attr(feature = "cli", value(help = "PostgreSQL itself, or a pooler in session mode"))]
    None,
    /// A pooler that lends a server connection for one transaction at a time (PgBouncer's
    /// `pool_mode = transaction`): nothing may outlive a transaction (see the module
    /// documentation).
    #[cfg_attr(feature = "cli", value(help = "A pooler in transaction mode"))]
    Transaction,
    /// A pooler that lends a server connection for one transaction at a time and keeps
    /// protocol-level prepared statements across transactions (PgBouncer 1.21 or later with
    /// `max_prepared_statements` above 0): statements stay prepared and single statements
    /// pipeline on shared connections; the timeouts come from the role (see the module
    /// documentation).
    #[cfg_attr(
        feature = "cli",
        value(help = "A pooler in transaction mode that keeps prepared statements across transactions")
    )]
    TransactionPrepared,
}

impl Pooler {
    /// Whether a server connection is the server's for one transaction only, so work of
    /// several statements is one transaction that sets its own timeouts.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn lends_transactions(self) -> bool {
        matches!(self, Pooler::Transaction | Pooler::TransactionPrepared)
    }
}

/// SQLite's `synchronous` setting: what a commit waits for before it counts as done.
/// With the `cli` feature it is the value of the server's `--sqlite-synchronous`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum SqliteSynchronous {
    /// `FULL` (2): every commit is synced to disk (one fsync of the WAL per commit, so per
    /// batch of the [`Writer`]) before it is acknowledged: an acknowledged write survives
    /// an operating-system crash or a power loss.
    #[default]
    #[cfg_attr(feature = "cli", value(help = "Every commit is synced to disk before it is acknowledged"))]
    Full,
    /// `NORMAL` (1): the WAL is synced only at checkpoints. A process crash loses nothing,
    /// but an operating-system crash or a power loss can roll back the last acknowledged
    /// writes (never corrupting the database).
    #[cfg_attr(feature = "cli", value(help = "The WAL is synced at checkpoints only"))]
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

impl Default for DbConfig {
    /// SQLite in `wpds.sqlite3`, the engine's pool size, a 1.5 s wait, commits synced,
    /// no pooler.
    fn default() -> Self {
        DbConfig {
            url: Self::DEFAULT_URL.to_owned(),
            pool_size: 0,
            timeout: Duration::from_millis(Self::DEFAULT_TIMEOUT_MS),
            sqlite_synchronous: SqliteSynchronous::default(),
            pooler: Pooler::default(),
            migrate: true,
        }
    }
}

impl DbConfig {
    /// The database when none is named: SQLite, in the working directory, created and
    /// migrated on first start.
    pub const DEFAULT_URL: &str = "sqlite://wpds.sqlite3";

    /// How long a request may wait for the database in all, in milliseconds, by default:
    /// with the rest of a request's work, a 503 comes within 2 s.
    pub const DEFAULT_TIMEOUT_MS: u64 = 1500;

    /// The pool's size: `pool_size`, or when it is 0 the engine's default (SQLite 4, whose
    /// pool serves reads only; PostgreSQL 16).
    pub fn connections(&self) -> u32 {
        match (self.pool_size, self.engine()) {
            (0, Engine::Sqlite) => 4,
            (0, Engine::Postgres) => 16,
            (size, _) => size,
        }
    }

    /// The engine `url` names.
    pub fn engine(&self) -> Engine {
        if self.url.starts_with("postgres://") || self.url.starts_with("postgresql://") {
            Engine::Postgres
        } else {
            Engine::Sqlite
        }
    }

    /// The SQLite file path of a `sqlite://PATH` or bare-path URL.
    pub fn sqlite_path(&self) -> &str {
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
    pooler: Pooler,
    /// Whether reaching the database migrates it, or only checks it is ([`DbConfig::migrate`]).
    migrate: bool,
    /// Whether the database was reached and migrated: until then no work runs.
    ready: AtomicBool,
    /// Behind a transaction pooler, whether the role's timeouts bound statements, so a unit
    /// of one statement needs no transaction of its own ([`Database::read_role_timeouts`]).
    bare_statements: AtomicBool,
    /// Whether a connection failed recently (see [`Database::release`]).
    suspicion: Arc<Suspicion>,
    /// On PostgreSQL, the shared connections single statements pipeline on, once the server
    /// asked for them ([`Database::share_statements`]).
    shared: Option<SharedPg>,
    /// On PostgreSQL, the batcher of batched writes' common case
    /// ([`crate::engine::pg_batcher`]).
    batcher: Option<PgBatcher>,
    /// Told how long each checkout waited, once someone asked ([`Database::observe_pool_waits`]).
    pool_waits: OnceLock<PoolWaitObserver>,
    /// What its spans say of the server ([`crate::engine::trace`]).
    span_attributes: crate::engine::trace::DbAttributes,
}

/// How [`Database::run_as`] runs work on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// Any work: behind a transaction pooler one transaction that sets its timeouts; else
    /// as it is, its lock wait shortened to its deadline.
    Work,
    /// One statement as it is, bounded by the role's timeouts.
    BareStatement,
}

/// What [`Database::observe_pool_waits`] calls with each checkout's wait.
pub type PoolWaitObserver = Box<dyn Fn(Duration) + Send + Sync>;

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
struct PostgresSession {
    timeout: Duration,
    pooler: Pooler,
}

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for PostgresSession {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        match self.pooler {
            // A row lock held elsewhere must not make a request wait without bound: after
            // the timeout the statement fails and the request answers 503, like SQLite's
            // busy_timeout. Nor may a statement that runs long (a slow server, a plan gone
            // wrong) hold its connection and its locks past any request's budget: a
            // reachable server cancels it, and the request answers 503 too.
            Pooler::None => conn
                .batch_execute(&format!(
                    "{}; {}",
                    timeouts_sql("SET", self.timeout, self.timeout),
                    crate::engine::batch::GENERIC_PLANS
                ))
                .map_err(diesel::r2d2::Error::QueryError),
            // The same timeouts come with each transaction ([`Database::run_until`]); a
            // statement prepared under a name would be missing, or another's, on the next
            // server connection.
            Pooler::Transaction => {
                conn.set_prepared_statement_cache_size(CacheSize::Disabled);
                Ok(())
            }
            // The pooler keeps the statements; the role keeps the timeouts
            // ([`Database::reach`] checked them).
            Pooler::TransactionPrepared => Ok(()),
        }
    }
}

/// `SET` (or `SET LOCAL`) of a PostgreSQL connection's statement and lock timeouts, in
/// milliseconds (a lock wait of at least 1 ms: 0 would mean "forever").
fn timeouts_sql(set: &str, statement: Duration, lock: Duration) -> String {
    format!(
        "{set} statement_timeout = {}; {set} lock_timeout = {}",
        statement.as_millis(),
        lock.as_millis().max(1)
    )
}

/// A pool builder for SQLite connections with the server's pragmas.
fn sqlite_pool_builder(
    config: &DbConfig,
    errors: SharedLog,
) -> diesel::r2d2::Builder<ConnectionManager<SqliteConnection>> {
    Pool::builder()
        .connection_timeout(config.timeout)
        .test_on_check_out(false)
        .error_handler(Box::new(errors))
        .connection_customizer(Box::new(SqlitePragmas {
            busy_timeout: config.timeout,
            synchronous: config.sqlite_synchronous,
        }))
}

/// What builds the [`Writer`]'s pool: one connection to `path`, opened on the first write,
/// never in the background. The writer builds a new pool to discard its connection after
/// a fault, so the pools share one thread for opening connections and have no reaper
/// (the writer holds its connection checked out): building one starts no thread.
fn writer_pools(path: &str, config: &DbConfig) -> Box<dyn Fn() -> WriterPool + Send> {
    let (path, config, errors) = (path.to_owned(), config.clone(), SharedLog::default());
    let threads = Arc::new(
        ScheduledThreadPool::builder()
            .num_threads(1)
            .thread_name_pattern("wpds-sqlite-writer-open-{}")
            .build(),
    );
    Box::new(move || {
        sqlite_pool_builder(&config, errors.clone())
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
    /// What its spans say of the server ([`crate::engine::trace`]).
    pub(crate) fn span_attributes(&self) -> &crate::engine::trace::DbAttributes {
        &self.span_attributes
    }

    /// Connects (reporting the real cause of a failure), builds the pool and applies any
    /// pending migrations.
    pub fn open(config: &DbConfig) -> Result<Self, StoreError> {
        let database = Self::connect(config)?;
        database.reach()?;
        Ok(database)
    }

    /// Connects and builds the pool without migrating. The connection comes first: a
    /// command that fails on an unreachable server exits before the pool has a thread
    /// opening connections (libpq torn down under such a thread at exit crashed a command).
    pub fn connect(config: &DbConfig) -> Result<Self, StoreError> {
        if config.engine() == Engine::Postgres {
            probe(&config.url, config.timeout)?;
        }
        let database = Self::build(config)?;
        database.ready.store(true, Ordering::Relaxed);
        Ok(database)
    }

    /// Builds the pools without reaching PostgreSQL (SQLite's file is opened, and a failure
    /// to open it reported): the database serves no work (`Database::run_until` answers
    /// `Unavailable`) until `Database::reach` has connected and migrated, so a server can
    /// start, and say it is not ready, while PostgreSQL is away.
    pub fn build(config: &DbConfig) -> Result<Self, StoreError> {
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
                let readers = sqlite_pool_builder(config, SharedLog::default())
                    .max_size(config.connections())
                    .min_idle(None);
                Pools::Sqlite(readers.build_unchecked(ConnectionManager::new(path)))
            }
            Engine::Postgres => {
                // No idle connections kept open ahead of need (`min_idle` 0): the pool opens
                // them as requests ask, so a start-up that waits for the database, or a
                // process that exits, has no thread of the pool inside libpq.
                let pool = Pool::builder()
                    .max_size(config.connections())
                    .min_idle(Some(0))
                    .connection_timeout(config.timeout)
                    .test_on_check_out(false)
                    .error_handler(Box::new(ThrottledLog::default()))
                    .connection_customizer(Box::new(PostgresSession {
                        timeout: config.timeout,
                        pooler: config.pooler,
                    }))
                    .build_unchecked(ConnectionManager::new(with_network_timeouts(
                        &config.url,
                        config.timeout,
                    )));
                Pools::Postgres(pool)
            }
        };
        Ok(Database {
            pools,
            engine,
            url: config.url.clone(),
            timeout: config.timeout,
            writer,
            pooler: match engine {
                Engine::Sqlite => Pooler::None,
                Engine::Postgres => config.pooler,
            },
            migrate: config.migrate,
            ready: AtomicBool::new(false),
            bare_statements: AtomicBool::new(false),
            suspicion: Default::default(),
            shared: None,
            batcher: (engine == Engine::Postgres).then(PgBatcher::new),
            pool_waits: OnceLock::new(),
            span_attributes: match engine {
                Engine::Sqlite => crate::engine::trace::DbAttributes::sqlite(),
                Engine::Postgres => crate::engine::trace::DbAttributes::postgres(&config.url),
            },
        })
    }

    /// Connects and applies pending migrations ([`DbConfig::migrate`]; without it, checks
    /// that none is pending: `Unavailable` naming them while one is, so a server waiting
    /// for the database waits for `wpds migrate` too); from then on the database serves
    /// work. Returns the versions applied. A schema newer than this build (migrations it
    /// does not know: a rollback to the release before) is served as it is, and logged,
    /// as the rule for migrations allows (*expand, then contract*, `docs/operations.md`).
    /// Behind a transaction pooler it first reads the role's timeouts back
    /// (`Database::read_role_timeouts`).
    pub(crate) fn reach(&self) -> Result<Vec<String>, StoreError> {
        if self.engine == Engine::Postgres {
            probe(&self.url, self.timeout)?;
        }
        // (On SQLite the pooler is `None`.)
        if self.pooler.lends_transactions() {
            self.read_role_timeouts()?;
        }
        let applied = if self.migrate { self.migrate()? } else { Vec::new() };
        let status = self.migration_status()?;
        if !status.pending.is_empty() {
            return Err(StoreError::Unavailable(format!(
                "the schema lacks {} migration(s) this build needs: {}; run `wpds migrate` \
                 (this server does not migrate: WPDS_MIGRATE=false)",
                status.pending.len(),
                status.pending.join(", ")
            )));
        }
        if !status.unknown.is_empty() {
            log::warn!(
                "the schema is newer than this build: it holds {} migration(s) this build does not know ({}); \
                 serving on it, as the release before a migration may (expand, then contract)",
                status.unknown.len(),
                status.unknown.join(", ")
            );
        }
        self.ready.store(true, Ordering::Relaxed);
        Ok(applied)
    }

    /// Which of this build's migrations the database lacks, and which it holds that this
    /// build does not know (`wpds migrate --check`).
    pub fn migration_status(&self) -> Result<MigrationStatus, StoreError> {
        fn status<C: MigrationHarness<DB>, DB: diesel::backend::Backend>(
            conn: &mut C,
            source: EmbeddedMigrations,
        ) -> Result<MigrationStatus, Box<dyn std::error::Error + Send + Sync>> {
            use diesel::migration::MigrationSource;
            let known: Vec<_> = MigrationSource::<DB>::migrations(&source)?;
            let applied = conn.applied_migrations()?;
            let pending = known
                .iter()
                .filter(|m| !applied.contains(&m.name().version()))
                .map(|m| m.name().to_string())
                .collect();
            let unknown = applied
                .iter()
                .filter(|version| !known.iter().any(|m| m.name().version() == **version))
                .map(ToString::to_string)
                .collect();
            Ok(MigrationStatus { pending, unknown })
        }
        match &mut self.conn()? {
            DbConn::Sqlite(c) => status(&mut **c, SQLITE_MIGRATIONS),
            DbConn::Postgres(c) => status(&mut **c, POSTGRES_MIGRATIONS),
        }
        .map_err(migration_failed)
    }

    /// `Database::reach`, tried again and again (after 0.25 s, then twice as long each
    /// time up to 5 s) while the database is unavailable, for at most `wait`; each failure
    /// logged at most every few seconds ([`ThrottledLog`]). The error is the last attempt's.
    pub fn reach_within(&self, wait: Duration) -> Result<Vec<String>, StoreError> {
        let deadline = Instant::now() + wait;
        let (log, mut pause) = (ThrottledLog::default(), Duration::from_millis(250));
        loop {
            match self.reach() {
                Err(StoreError::Unavailable(why)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(StoreError::Unavailable(why));
                    }
                    log.log(
                        &format!("the database is not ready; trying again for {} s more", left.as_secs()),
                        &why,
                    );
                    std::thread::sleep(pause.min(left));
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
                outcome => return outcome,
            }
        }
    }

    /// Behind a transaction pooler: whether the role's timeouts bound statements within the
    /// server's (`crate::engine::role_timeouts`). When they do, a batched statement runs as
    /// it is ([`Database::run_batch_until`]); when they do not, behind
    /// a pooler that keeps prepared statements the server refuses to start (`Internal`,
    /// saying what to run: its shared connections' statements would have no bound), and
    /// behind one that keeps none each unit stays a transaction that sets its own, which
    /// is logged once with what to run.
    fn read_role_timeouts(&self) -> Result<(), StoreError> {
        let shortfall = crate::engine::role_timeouts::shortfall(&mut self.conn()?, self.timeout)?;
        self.bare_statements.store(shortfall.is_none(), Ordering::Relaxed);
        match (shortfall, self.pooler) {
            (None, _) => Ok(()),
            (Some(why), Pooler::TransactionPrepared) => Err(StoreError::Internal(format!(
                "behind a pooler that keeps prepared statements (WPDS_PG_POOLER=transaction-prepared) \
                 the server sets no timeout for a session, so the role's bound its statements: {why}; \
                 then start the server again"
            ))),
            (Some(why), _) => {
                log::info!(
                    "behind a transaction pooler each statement runs in a transaction that sets its \
                     timeouts (two more round trips), since the role's do not bound it: {why}"
                );
                Ok(())
            }
        }
    }

    /// Whether the database was reached and migrated ([`Database::reach`]).
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// The SQLite writer thread, through which the server runs its writes; `None` on
    /// PostgreSQL, where writes run on pooled connections side by side, and batched writes'
    /// common case in batches of its own (`engine/pg_batcher.rs`).
    pub fn writer(&self) -> Option<&Writer> {
        self.writer.as_ref()
    }

    /// On PostgreSQL, the batcher of batched writes' common case.
    pub(crate) fn batcher(&self) -> Option<&PgBatcher> {
        self.batcher.as_ref()
    }

    /// Has `observer` hear of every batch that commits from now on (SQLite's writer's, or
    /// PostgreSQL's batched statements'), once its writes are answered, on the thread that
    /// ran it. Only the first observer given is kept.
    pub fn observe_batches(&self, observer: BatchObserver) {
        match (&self.writer, &self.batcher) {
            (Some(writer), _) => writer.observe_batches(observer),
            (None, Some(batcher)) => batcher.observe(observer),
            (None, None) => {}
        }
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

    /// Runs `work` on a pooled connection, waiting for the database until `deadline` at most
    /// in all: the checkout waits at most until then (its wait is observed,
    /// [`Database::observe_pool_waits`]),
    /// and when less than the configured timeout (minus `lock_wait::LOCK_WAIT_SLACK`) is
    /// left after it, the work's lock waits (SQLite `busy_timeout`, PostgreSQL `lock_timeout`) are
    /// shortened to what is left. Behind a transaction pooler the work is one transaction
    /// that begins with its timeouts (`SET LOCAL`); elsewhere it runs as it is (a write opens
    /// its own transaction, `db_write!`). `Unavailable` when the deadline passes
    /// or no working connection comes in time.
    ///
    /// A connection whose work failed in the database, or that finished after `deadline`
    /// (its state is not known), is closed instead of going back to the pool
    /// ([`Database::release`]).
    pub(crate) fn run_until<T>(
        &self,
        deadline: Instant,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.run_as(deadline, Unit::Work, self.timeout, work)
    }

    /// [`Database::run_until`] for a batched statement ([`crate::engine::pg_batcher`]),
    /// where there are no shared connections: behind a transaction pooler whose role bounds
    /// statements ([`Database::read_role_timeouts`]) it runs as it is, in its own implicit
    /// transaction, one round trip instead of three (a lock wait then leaves the connection
    /// pooled); elsewhere it is any work. It waits for a lock [`LOCK_WAIT`] at most (as the
    /// role's `lock_timeout` has it behind a pooler whose role bounds statements): a row held
    /// elsewhere holds up every write of the batch, each of which then waits for it on its
    /// own, within its own budget.
    pub(crate) fn run_batch_until<T>(
        &self,
        deadline: Instant,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.run_as(deadline, self.statement_unit(), LOCK_WAIT.min(self.timeout), work)
    }

    /// How a unit of one statement runs: as it is behind a transaction pooler whose role
    /// bounds statements (set only there, [`Database::read_role_timeouts`]), else as any work.
    fn statement_unit(&self) -> Unit {
        if self.bare_statements.load(Ordering::Relaxed) { Unit::BareStatement } else { Unit::Work }
    }

    /// [`Database::run_until`], `work` run as `unit` says, its lock waits `most_lock_wait` at
    /// most.
    fn run_as<T>(
        &self,
        deadline: Instant,
        unit: Unit,
        most_lock_wait: Duration,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if !self.is_ready() {
            return Err(StoreError::Unavailable(
                "the database has not been reached since start-up".to_owned(),
            ));
        }
        let checkout = Instant::now();
        let mut conn = self.checkout(deadline.saturating_duration_since(checkout))?;
        if let Some(observe) = self.pool_waits.get() {
            observe(checkout.elapsed());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let lock_wait = if shortens(left, most_lock_wait) { left } else { most_lock_wait };
        let (result, healthy) = match unit {
            Unit::BareStatement => (work(&mut conn), true),
            Unit::Work if self.pooler.lends_transactions() => {
                (self.in_transaction(&mut conn, lock_wait, work), true)
            }
            Unit::Work => self.with_lock_wait(&mut conn, lock_wait, work),
        };
        let failed = !healthy
            || match &result {
                // A lock wait is the statement's outcome, not the connection's.
                Err(busy) if busy.is_lock_wait() => false,
                Err(StoreError::Unavailable(_) | StoreError::Internal(_)) => true,
                _ => false,
            };
        self.release(conn, failed, Instant::now() > deadline);
        result
    }

    /// Has `observer` told how long each checkout of `Database::run_until` waited (the
    /// first observer stays).
    pub fn observe_pool_waits(&self, observer: PoolWaitObserver) {
        let _ = self.pool_waits.set(observer);
    }

    /// A connection of the pool within `budget`. While the pool is suspect (a connection
    /// failed within the last 30 s, [`crate::engine::suspicion`]), each connection is verified with
    /// a trivial statement first and a dead one is closed and replaced.
    fn checkout(&self, budget: Duration) -> Result<DbConn, StoreError> {
        let started = Instant::now();
        loop {
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(budget_spent());
            }
            let mut conn = match &self.pools {
                Pools::Sqlite(pool) => DbConn::Sqlite(pool.get_timeout(left)?),
                Pools::Postgres(pool) => DbConn::Postgres(pool.get_timeout(left)?),
            };
            if !self.is_suspect() || verify(&mut conn) {
                return Ok(conn);
            }
            discard(&mut conn);
        }
    }

    /// Runs `work` with the connection's lock wait set to `wait` for it (when that is not
    /// the configured one), then put back; also says whether putting it back worked (if
    /// not, the connection may be broken, and the answer stands).
    fn with_lock_wait<T>(
        &self,
        conn: &mut DbConn,
        wait: Duration,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError>,
    ) -> (Result<T, StoreError>, bool) {
        if wait == self.timeout {
            return (work(conn), true);
        }
        if let Err(e) = set_lock_wait(conn, wait) {
            return (Err(e), false);
        }
        let result = work(conn);
        let restored = set_lock_wait(conn, self.timeout).is_ok();
        (result, restored)
    }

    /// Runs `work` in one transaction that begins with the statement timeout and the lock
    /// wait `wait` (`SET LOCAL`, which ends with it), for a connection lent by a transaction
    /// pooler. The transaction commits whatever `work`'s outcome: what `work` would have
    /// committed on a connection of its own (a write's transaction, `db_write!`, is
    /// a savepoint here and rolled back on its own when it fails; an audit entry of a refusal
    /// is written and kept) is kept. A failure to commit is the answer when `work`
    /// succeeded; else `work`'s error is.
    fn in_transaction<T>(
        &self,
        conn: &mut DbConn,
        wait: Duration,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        use diesel::connection::{AnsiTransactionManager, TransactionManager};
        let begin = format!("BEGIN; {}", timeouts_sql("SET LOCAL", self.timeout, wait));
        crate::db_run!(conn => AnsiTransactionManager::begin_transaction_sql(conn, &begin))?;
        let result = work(conn);
        // After a failed statement outside a savepoint, PostgreSQL turns COMMIT into a
        // rollback; a commit that fails leaves the transaction manager in error, and the
        // pool closes the connection.
        let committed = crate::db_run!(conn => AnsiTransactionManager::commit_transaction(conn));
        match (result, committed) {
            (Ok(_), Err(e)) => Err(e.into()),
            (result, _) => result,
        }
    }

    /// Hands a connection back after work. One whose work `failed` in the database (it
    /// may be broken), or that finished only after its request had given up (`late`: its
    /// state is not known), is closed instead of going back to the pool, and the pool
    /// turns suspect for 30 s (`crate::engine::suspicion`): the other connections of an outage are verified
    /// before they are handed out again.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn release(&self, mut conn: DbConn, failed: bool, late: bool) {
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
    /// connections (`shared_pg`), `per_thread` on each thread that runs them (the
    /// server's workers). Returns why not when the URL has something tokio-postgres does not
    /// read as libpq does (then statements keep running on the blocking pool); nothing to do
    /// on SQLite or behind a transaction pooler.
    pub fn share_statements(&mut self, per_thread: usize) -> Result<(), String> {
        if self.engine != Engine::Postgres {
            return Ok(());
        }
        if self.pooler == Pooler::Transaction {
            // diesel-async prepares every statement under a name, which the next
            // transaction's server connection does not have.
            return Ok(());
        }
        // Behind a pooler the role's timeouts hold ([`Database::reach`]): a setting made for
        // the session would stay on a server connection that other clients get next.
        let session_settings = self.pooler == Pooler::None;
        let shared =
            SharedPg::new(&self.url, self.timeout, per_thread, session_settings, Arc::clone(&self.suspicion))
                .map_err(|why| {
                    format!("the database URL is not one tokio-postgres reads as libpq does ({why})")
                })?;
        self.shared = Some(shared);
        Ok(())
    }

    /// Whether single statements run on shared PostgreSQL connections (once the database
    /// is reached: [`Database::shared`]).
    pub fn shares_statements(&self) -> bool {
        self.shared.is_some()
    }

    /// The shared PostgreSQL connections for single statements, when they are in use (not
    /// before the database was reached: until then statements go the way of all work, which
    /// answers `Unavailable`).
    pub fn shared(&self) -> Option<&SharedPg> {
        self.shared.as_ref().filter(|_| self.is_ready())
    }

    /// A connection from the pool; `Unavailable` when none comes within the timeout. Work
    /// reaches it through [`Database::read`] and [`Database::write`]; tests that look at the
    /// tables themselves take one with the `test-support` feature.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn conn(&self) -> Result<DbConn, StoreError> {
        Ok(match &self.pools {
            Pools::Sqlite(pool) => DbConn::Sqlite(pool.get()?),
            Pools::Postgres(pool) => DbConn::Postgres(pool.get()?),
        })
    }

    /// Applies pending migrations and provisions the server's secrets
    /// (`secrets::provision`); returns the versions applied. On PostgreSQL all
    /// pending migrations are one transaction holding an advisory lock, so instances starting
    /// together migrate one at a time (the others then find nothing pending), a failure
    /// leaves the schema as it was, and a transaction pooler keeps the lock and the settings
    /// on one server connection.
    pub fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn()?;
        let applied = match &mut conn {
            DbConn::Sqlite(c) => {
                c.run_pending_migrations(SQLITE_MIGRATIONS).map(versions).map_err(migration_failed)
            }
            DbConn::Postgres(c) => c.transaction(|c| {
                // A migration may rewrite a large table: requests' statement timeout is not
                // its bound. Lock waits: see [`MIGRATION_LOCK_WAIT`].
                c.batch_execute(&format!(
                    "{}; SELECT pg_advisory_xact_lock({MIGRATION_LOCK}); {}",
                    timeouts_sql("SET LOCAL", Duration::ZERO, MIGRATION_LOCK_WAIT),
                    timeouts_sql("SET LOCAL", Duration::ZERO, self.timeout)
                ))?;
                c.run_pending_migrations(POSTGRES_MIGRATIONS).map(versions).map_err(migration_failed)
            }),
        }?;
        crate::engine::secrets::provision(&mut conn)?;
        Ok(applied)
    }

    /// Writes a copy of the SQLite database to the new file `to`, online: one read of a
    /// consistent snapshot (`VACUUM INTO`), committed writes in the WAL included, beside the
    /// writer and the readers. It refuses a file that exists. On PostgreSQL it refuses:
    /// `pg_dump` takes that engine's backups (`docs/operations.md`).
    pub fn back_up_into(&self, to: &std::path::Path) -> Result<(), StoreError> {
        let to = to.to_str().ok_or_else(|| {
            StoreError::Internal(format!("the backup's path {} is not UTF-8", to.display()))
        })?;
        match &mut self.conn()? {
            DbConn::Sqlite(conn) => {
                use diesel::RunQueryDsl;
                diesel::sql_query("VACUUM INTO ?")
                    .bind::<diesel::sql_types::Text, _>(to)
                    .execute(&mut **conn)
                    .map(drop)
                    .map_err(StoreError::from)
            }
            DbConn::Postgres(_) => Err(StoreError::Internal(
                "a PostgreSQL database is backed up with pg_dump (docs/operations.md, \"Backup and restore\")"
                    .to_owned(),
            )),
        }
    }

    /// [`Database::ping`] on `conn`: whether the database serves now (see there).
    pub(crate) fn ping_on(&self, conn: &mut DbConn) -> Result<(), StoreError> {
        if let Some(writer) = &self.writer
            && !writer.is_healthy()
        {
            writer.probe(Instant::now() + self.timeout)?;
        }
        crate::db_run!(conn => conn.batch_execute("SELECT 1")).map_err(StoreError::from)
    }
}

/// Connects once directly to the PostgreSQL at `url`, so an unreachable server or a bad URL
/// is reported with its real cause instead of after r2d2's retries.
fn probe(url: &str, timeout: Duration) -> Result<(), StoreError> {
    PgConnection::establish(&with_network_timeouts(url, timeout)).map(drop).map_err(|e| {
        StoreError::Unavailable(format!("cannot connect to PostgreSQL: {}", one_line(&e.to_string())))
    })
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

/// A migration's failure: `Unavailable` when the database was (a lock not granted in
/// time, a lost connection: trying again is the remedy), else `Internal`.
fn migration_failed(e: Box<dyn std::error::Error + Send + Sync>) -> StoreError {
    match e.downcast::<diesel::result::Error>() {
        Ok(database) => match StoreError::from(*database) {
            StoreError::Unavailable(why) => StoreError::Unavailable(format!("migration failed: {why}")),
            other => StoreError::Internal(format!("migration failed: {other}")),
        },
        Err(e) => StoreError::Internal(format!("migration failed: {e}")),
    }
}

fn versions(applied: Vec<diesel::migration::MigrationVersion<'_>>) -> Vec<String> {
    applied.iter().map(ToString::to_string).collect()
}
