//! Shared, pipelining PostgreSQL connections for single statements (the server's hot
//! path: the batches of token lookups, membership checks and time-log writes, each batch
//! one statement, [`crate::engine::pg_batcher`]).
//!
//! Why: a blocking connection costs a thread's sleep and wake-up per statement, and a
//! request holds its connection for the whole round trip; pgbench, and any async peer,
//! wait on many connections from few threads. Here each of the server's worker threads
//! keeps up to `per_thread` diesel-async [`AsyncPgConnection`]s, driven by that thread's
//! own event loop (no hop to another thread), and any number of requests' statements are
//! in flight on one connection at once: each is its own autocommit transaction, so
//! pipelining them changes nothing of their meaning ([`crate::engine::statement`]).
//!
//! Rules, the same as the blocking pool's ([`crate::engine::db`]):
//! - Timeouts are set in code, not read from the URL: connect timeout, TCP keepalives and
//!   `tcp_user_timeout` as the blocking connections get them
//!   (`crate::engine::network::network_settings`), and `statement_timeout` (the database
//!   timeout) and `lock_timeout` ([`LOCK_WAIT`]) at connection start-up, with generic plans
//!   for prepared statements (`crate::engine::batch::GENERIC_PLANS`) — on PostgreSQL
//!   itself; behind a transaction pooler nothing is set for a session (it would stay on a
//!   server connection another client gets next), and the role's settings bound statements
//!   instead ([`crate::engine::db`]).
//! - The caller bounds each statement by its request's deadline; a statement dropped
//!   before it finished (its request gave up), or one that failed in the database, takes
//!   its connection out of use (it closes once its other statements are done) and makes
//!   the database suspect: until then every connection made before the failure runs a
//!   trivial statement before its next use, so the connections of an outage are found and
//!   replaced, not handed to requests (`Suspicion`).
//! - A statement waits for a row lock at most [`LOCK_WAIT`]: the statements pipelined
//!   behind it on its connection wait as long. One that gives up (`is_lock_wait`) leaves
//!   its connection in use; the server then does the write on the blocking pool, which
//!   waits for the lock within the request's budget.
//! - Connections are made on demand, one per waiting request while a thread has fewer than
//!   `per_thread`, and only within the request's deadline; nothing reconnects in the
//!   background.
//! - The URL is read by tokio-postgres only when it means the same there as to libpq
//!   (`SharedPg::new` says why not otherwise, and the server keeps single statements on
//!   the blocking pool). TLS is negotiated as libpq does for `sslmode` `prefer` (its
//!   default) and `require`: encrypted, the certificate not verified.

use crate::engine::network::network_settings;
use crate::engine::statement::{StatementConn, StatementFuture};
use crate::engine::suspicion::Suspicion;
use crate::error::StoreError;
use diesel_async::AsyncPgConnection;
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use postgres_openssl::MakeTlsConnector;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// The longest a statement on a shared connection waits for a row lock (or the database
/// timeout, if shorter): long enough for a write that races another on the same row to
/// wait out the other's commit, short enough that the statements pipelined behind it are
/// not held up by a lock held for long.
pub const LOCK_WAIT: Duration = Duration::from_millis(50);

/// The shared connections of every worker thread, for one database.
pub struct SharedPg {
    /// Tells this database's connections apart from another's on the same thread (tests
    /// run several servers in one process).
    id: u64,
    config: tokio_postgres::Config,
    tls: MakeTlsConnector,
    /// The session's settings, made on each new connection before its first use (none
    /// behind a pooler).
    session: Option<String>,
    per_thread: usize,
    suspicion: Arc<Suspicion>,
    /// Every thread's connections, for [`SharedPg::state`] (read from other threads).
    threads: Mutex<Vec<Weak<Local>>>,
}

/// The shared connections of all threads at one moment (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedState {
    /// Connections open.
    pub open: usize,
    /// Open connections with no statement in flight.
    pub idle: usize,
    /// Statements in flight, on all connections.
    pub statements: usize,
    /// The most that may be open: the per-thread limit times the threads that have run a
    /// statement.
    pub most: usize,
}

impl std::ops::Add for SharedState {
    type Output = SharedState;

    fn add(self, other: SharedState) -> SharedState {
        SharedState {
            open: self.open + other.open,
            idle: self.idle + other.idle,
            statements: self.statements + other.statements,
            most: self.most + other.most,
        }
    }
}

/// One thread's connections.
struct Local {
    slots: Mutex<Vec<Slot>>,
    /// Told when a slot changes, for requests waiting for a connection to be made.
    changed: tokio::sync::Notify,
}

enum Slot {
    Empty,
    Connecting,
    Ready(Arc<Shared>),
}

/// One shared connection.
struct Shared {
    pg: AsyncPgConnection,
    /// Statements on it now.
    in_flight: AtomicUsize,
    /// The suspicion's generation it was last known good at.
    checked: AtomicU64,
}

impl Local {
    /// This thread's connections now; `most` is `per_thread`.
    fn state(&self, per_thread: usize) -> SharedState {
        let slots = lock(&self.slots);
        let ready = slots.iter().filter_map(|slot| match slot {
            Slot::Ready(shared) => Some(shared.in_flight.load(Ordering::Relaxed)),
            _ => None,
        });
        ready.fold(SharedState { most: per_thread, ..SharedState::default() }, |sum, in_flight| {
            sum + SharedState { open: 1, idle: usize::from(in_flight == 0), statements: in_flight, most: 0 }
        })
    }
}

thread_local! {
    static LOCAL: RefCell<Vec<(u64, Arc<Local>)>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl SharedPg {
    /// Shared connections to the database at `url` (the URL as configured, before
    /// [`crate::engine::network::with_network_timeouts`]), `per_thread` on each thread that runs
    /// statements; statements and lock waits end after `timeout`, set for each connection's
    /// session when `session_settings` (else the role's settings hold). An error says why the
    /// URL cannot be read the same way by tokio-postgres (a libpq-only parameter, say
    /// `sslmode=verify-full` or `sslrootcert`); the caller then keeps statements on the
    /// blocking pool.
    pub(crate) fn new(
        url: &str,
        timeout: Duration,
        per_thread: usize,
        session_settings: bool,
        suspicion: Arc<Suspicion>,
    ) -> Result<Self, String> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e: tokio_postgres::Error| {
            // Its Display leaves out the cause, which names the option.
            match std::error::Error::source(&e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            }
        })?;
        for (name, value) in network_settings(url, timeout) {
            let seconds = |v: &str| Duration::from_secs(v.parse().unwrap_or(1));
            match name {
                "connect_timeout" => config.connect_timeout(seconds(&value)),
                "keepalives" => config.keepalives(value == "1"),
                "keepalives_idle" => config.keepalives_idle(seconds(&value)),
                "keepalives_interval" => config.keepalives_interval(seconds(&value)),
                "keepalives_count" => config.keepalives_retries(value.parse().unwrap_or(3)),
                "tcp_user_timeout" => {
                    config.tcp_user_timeout(Duration::from_millis(value.parse().unwrap_or(1000)))
                }
                other => return Err(format!("no tokio-postgres setting for {other}")),
            };
        }
        let (millis, lock_millis) = (timeout.as_millis(), timeout.min(LOCK_WAIT).as_millis().max(1));
        // Set once the connection is made, not sent as the `options` startup parameter,
        // which PgBouncer refuses (and, told to ignore it, drops silently).
        let session = session_settings.then(|| {
            format!(
                "SET statement_timeout = {millis}; SET lock_timeout = {lock_millis}; {}",
                crate::engine::batch::GENERIC_PLANS
            )
        });
        let mut tls = SslConnector::builder(SslMethod::tls()).map_err(|e| format!("TLS: {e}"))?;
        // libpq's `prefer` and `require`: encryption without verifying the certificate
        // (the modes that verify make `new` fail above: tokio-postgres does not read them).
        tls.set_verify(SslVerifyMode::NONE);
        Ok(SharedPg {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            config,
            tls: MakeTlsConnector::new(tls.build()),
            session,
            per_thread: per_thread.max(1),
            suspicion,
            threads: Mutex::new(Vec::new()),
        })
    }

    /// Runs `work`'s one statement over `input` on a shared connection of this thread, making one
    /// first if none is free and fewer than `per_thread` are open. The caller bounds it by
    /// its deadline: dropped before it finished, it takes its connection out of use.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) async fn run<I: ?Sized, T>(
        &self,
        input: &I,
        work: for<'c> fn(StatementConn<'c>, &'c I) -> StatementFuture<'c, T>,
    ) -> Result<T, StoreError> {
        let lease = self.lease().await?;
        let outcome = work(StatementConn::Shared(&lease.shared.pg), input).await;
        let failed = matches!(&outcome, Err(e @ (StoreError::Unavailable(_) | StoreError::Internal(_))) if !e.is_lock_wait());
        lease.finish(failed);
        outcome
    }

    /// Connections open on this thread now, and how many of them have no statement in
    /// flight.
    #[cfg(feature = "test-support")]
    pub fn thread_state(&self) -> (usize, usize) {
        let state = self.local().state(self.per_thread);
        (state.open, state.idle)
    }

    /// The connections of every thread now (threads that ended are left out).
    pub fn state(&self) -> SharedState {
        let mut threads = lock(&self.threads);
        threads.retain(|local| local.strong_count() > 0);
        threads
            .iter()
            .filter_map(Weak::upgrade)
            .fold(SharedState::default(), |sum, local| sum + local.state(self.per_thread))
    }

    /// This thread's connections.
    fn local(&self) -> Arc<Local> {
        LOCAL.with(|all| {
            let mut all = all.borrow_mut();
            if let Some((_, local)) = all.iter().find(|(id, _)| *id == self.id) {
                return Arc::clone(local);
            }
            let slots = (0..self.per_thread).map(|_| Slot::Empty).collect();
            let local = Arc::new(Local { slots: Mutex::new(slots), changed: tokio::sync::Notify::new() });
            all.push((self.id, Arc::clone(&local)));
            lock(&self.threads).push(Arc::downgrade(&local));
            local
        })
    }

    /// A connection for one statement: a free one; else a new one while a slot is empty;
    /// else the one with the fewest statements in flight; else (every slot still
    /// connecting) the first to be made. One made before the last failure is verified
    /// first.
    async fn lease(&self) -> Result<Lease<'_>, StoreError> {
        let local = self.local();
        loop {
            enum Pick {
                Use(usize, Arc<Shared>),
                Connect(usize),
                Wait,
            }
            let pick = {
                let mut slots = lock(&local.slots);
                let fewest = slots
                    .iter()
                    .enumerate()
                    .filter_map(|(at, slot)| match slot {
                        Slot::Ready(shared) => Some((at, shared)),
                        _ => None,
                    })
                    .min_by_key(|(_, shared)| shared.in_flight.load(Ordering::Relaxed));
                let empty = slots.iter().position(|slot| matches!(slot, Slot::Empty));
                match (fewest, empty) {
                    (Some((at, shared)), _) if shared.in_flight.load(Ordering::Relaxed) == 0 => {
                        Pick::Use(at, Arc::clone(shared))
                    }
                    (_, Some(at)) => {
                        slots[at] = Slot::Connecting;
                        Pick::Connect(at)
                    }
                    (Some((at, shared)), None) => Pick::Use(at, Arc::clone(shared)),
                    (None, None) => Pick::Wait,
                }
            };
            match pick {
                Pick::Use(at, shared) => {
                    let lease = Lease::new(self, &local, at, shared);
                    if self.verified(&lease).await {
                        return Ok(lease);
                    }
                    lease.finish(true);
                }
                Pick::Connect(at) => {
                    let generation = self.suspicion.generation();
                    let connecting = Connecting { local: &local, at, made: false };
                    // Boxed: connecting (TLS included) is a future of kilobytes that every
                    // statement's future would otherwise carry, and copy, for a step taken
                    // once per connection.
                    let shared = Arc::new(Shared {
                        pg: Box::pin(self.connect()).await?,
                        in_flight: AtomicUsize::new(0),
                        checked: AtomicU64::new(generation),
                    });
                    connecting.made(Arc::clone(&shared));
                    return Ok(Lease::new(self, &local, at, shared));
                }
                Pick::Wait => {
                    let changed = local.changed.notified();
                    let mut changed = std::pin::pin!(changed);
                    changed.as_mut().enable();
                    if lock(&local.slots).iter().any(|slot| !matches!(slot, Slot::Connecting)) {
                        continue;
                    }
                    changed.await;
                }
            }
        }
    }

    /// Whether the lease's connection may be used: it was made or checked since the last
    /// failure, or it answers a trivial statement now.
    async fn verified(&self, lease: &Lease<'_>) -> bool {
        let generation = self.suspicion.generation();
        if lease.shared.checked.load(Ordering::Relaxed) >= generation {
            return true;
        }
        let answered =
            diesel_async::RunQueryDsl::execute(diesel::sql_query("SELECT 1"), &mut &lease.shared.pg)
                .await
                .is_ok();
        if answered {
            lease.shared.checked.fetch_max(generation, Ordering::Relaxed);
        }
        answered
    }

    /// A new connection (TLS as `sslmode` says), with the session settings above.
    async fn connect(&self) -> Result<AsyncPgConnection, StoreError> {
        let unavailable = |e: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("cannot connect to PostgreSQL: {}", e.to_string().trim()))
        };
        let (client, connection) =
            self.config.connect(self.tls.clone()).await.map_err(|e| unavailable(&e))?;
        let mut conn = AsyncPgConnection::try_from_client_and_connection(client, connection)
            .await
            .map_err(|e| unavailable(&e))?;
        if let Some(session) = &self.session {
            diesel_async::SimpleAsyncConnection::batch_execute(&mut conn, session)
                .await
                .map_err(|e| unavailable(&e))?;
        }
        log::debug!("opened a shared PostgreSQL connection on {:?}", std::thread::current().name());
        Ok(conn)
    }
}

/// A statement's use of a shared connection. Finished with a failure, or dropped unfinished
/// (its request gave up), it takes the connection out of use and the database turns
/// suspect.
struct Lease<'a> {
    owner: &'a SharedPg,
    local: Arc<Local>,
    at: usize,
    shared: Arc<Shared>,
    finished: bool,
}

impl<'a> Lease<'a> {
    fn new(owner: &'a SharedPg, local: &Arc<Local>, at: usize, shared: Arc<Shared>) -> Self {
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        Lease { owner, local: Arc::clone(local), at, shared, finished: false }
    }

    /// Ends the lease; a `failed` one retires its connection.
    fn finish(mut self, failed: bool) {
        self.finished = !failed;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        if self.finished {
            return;
        }
        let mut slots = lock(&self.local.slots);
        if matches!(&slots[self.at], Slot::Ready(current) if Arc::ptr_eq(current, &self.shared)) {
            slots[self.at] = Slot::Empty;
        }
        drop(slots);
        self.local.changed.notify_waiters();
        self.owner.suspicion.mark();
    }
}

/// A slot being connected; dropped before the connection was made (the connect failed, or
/// its request gave up), the slot is empty again.
struct Connecting<'a> {
    local: &'a Local,
    at: usize,
    made: bool,
}

impl Connecting<'_> {
    fn made(mut self, shared: Arc<Shared>) {
        lock(&self.local.slots)[self.at] = Slot::Ready(shared);
        self.made = true;
    }
}

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        if !self.made {
            lock(&self.local.slots)[self.at] = Slot::Empty;
        }
        self.local.changed.notify_waiters();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
