//! The application: one function, [`Application::build`], turns a [`ServeConfig`] into the
//! running server, as `wpds serve` runs it and as every test that starts a server in
//! process runs it: the database (its pool, the SQLite writer, PostgreSQL's shared
//! pipelining connections), the demo workspace when asked for, the metrics, the rate
//! limiter, the authentication cache, the listeners and the workers.
//!
//! What belongs to the process rather than to one server stays outside, in `src/main.rs`:
//! the logger, tracing's global provider ([`crate::telemetry::init`]), the signals
//! ([`crate::server::stop_on_signal`]) and the demo's banner. A test process starts many
//! servers, so none of that can be done here.

use crate::auth_cache::AuthCache;
use crate::config::ServeConfig;
use crate::demo;
use crate::metrics::Metrics;
use crate::operations::OPERATIONS;
use crate::rate_limit::RateLimiter;
use crate::server;
use crate::state::AppState;
use actix_web::dev::{Server, ServerHandle};
use futures_util::future::{Either, select};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use wpds_storage::repos::auth::TokenLifetimes;
use wpds_storage::{Database, Engine};

/// A server, built and serving: [`Application::run_until_stopped`] runs it to its end.
pub struct Application {
    state: AppState,
    address: SocketAddr,
    api: Server,
    /// The metrics listener's server and address, when metrics are served.
    metrics: Option<(Server, SocketAddr)>,
    /// What `--demo` did, for the banner.
    demo: Option<demo::Loaded>,
    /// Reports once PostgreSQL was reached and migrated, when the server started without it
    /// (`WPDS_DB_WAIT_SECONDS`): `Err` says why the server must stop.
    reaching: Option<oneshot::Receiver<Result<(), String>>>,
}

impl Application {
    /// Builds the server `config` describes and starts serving: opens the database (or, on
    /// PostgreSQL with a wait, starts reaching it in the background while `/readyz` answers
    /// 503), loads the demo workspace with `--demo`, binds the API's listener and the
    /// metrics' (`WPDS_METRICS_BIND`), and starts the workers. Call it within an actix
    /// system (`actix_web::rt::System`), as the workers need one; the error says what
    /// failed, for the one line `wpds serve` prints before exiting 1.
    pub async fn build(config: &ServeConfig) -> Result<Application, String> {
        if let Some(defect) = wpds_storage::defects::seeded()? {
            log::warn!(
                "{}: the defect {defect:?} is seeded into this test build (scripts/cluster --defects): never serve clients with it",
                wpds_storage::defects::VARIABLE
            );
        }
        let db_config = config.db_config();
        let wait = Duration::from_secs(config.db_wait_seconds);
        let waits = db_config.engine() == Engine::Postgres && !config.demo && !wait.is_zero();
        let opened = if waits { Database::build(&db_config) } else { Database::open(&db_config) };
        let mut db = opened.map_err(|e| e.to_string())?;
        // On PostgreSQL single statements pipeline on shared connections, the pool's size
        // spread over the workers (each worker drives its own).
        let workers = server::worker_count(config);
        if let Err(why) = db.share_statements((db_config.connections() as usize).div_ceil(workers)) {
            log::warn!("single statements run on the blocking pool: {why}");
        }
        let demo = if config.demo { Some(demo::load(&db, config.reset)?) } else { None };
        let db = Arc::new(db);
        let draining = Arc::<std::sync::atomic::AtomicBool>::default();
        let metrics = match config.metrics_bind {
            Some(_) => {
                let operations: Vec<_> = OPERATIONS.iter().map(|op| (op.id, op.statuses)).collect();
                let metrics = Arc::new(Metrics::new(Arc::clone(&db), &operations, Arc::clone(&draining)));
                let waits = Arc::clone(&metrics);
                db.observe_pool_waits(Box::new(move |wait| waits.pool_waited(wait)));
                metrics
            }
            None => Arc::new(Metrics::off()),
        };
        observe_batches(&db, &metrics);
        let state = AppState {
            lifetimes: lifetimes(config),
            limiter: Arc::new(RateLimiter::new(
                config.rate_limit_per_minute,
                db.engine() == Engine::Postgres,
                config.trusted_proxies.clone(),
            )),
            auth_cache: Arc::new(AuthCache::new(config.auth_cache_ttl())),
            draining,
            metrics: Arc::clone(&metrics),
            db,
        };
        let listener = bind(config.bind, "")?;
        let address = local_address(&listener, config.bind)?;
        let metrics = match config.metrics_bind {
            Some(bind_to) => {
                let listener = bind(bind_to, " for metrics")?;
                let at = local_address(&listener, bind_to)?;
                Some((server::start_metrics(metrics, listener).map_err(failed)?, at))
            }
            None => None,
        };
        let reaching = if waits { Some(reach_in_background(Arc::clone(&state.db), wait)?) } else { None };
        let api = server::start(config, state.clone(), listener).map_err(failed)?;
        Ok(Application { state, address, api, metrics, demo, reaching })
    }

    /// The address the API listens on (the configured one, with the port the system chose
    /// for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The address of the metrics listener, when metrics are served.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|(_, at)| *at)
    }

    /// What every request reaches: the database, the limiter, the caches, the metrics.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// What `--demo` did to the database, when it was given.
    pub fn demo(&self) -> Option<&demo::Loaded> {
        self.demo.as_ref()
    }

    /// The handles that stop the servers: the API's first, then the metrics listener's.
    pub fn handles(&self) -> Vec<ServerHandle> {
        std::iter::once(self.api.handle())
            .chain(self.metrics.iter().map(|(server, _)| server.handle()))
            .collect()
    }

    /// Serves until the servers are stopped through their [`Application::handles`], or, when
    /// the database was being reached in the background, until it could not be reached in
    /// time (then the servers stop and the error says why).
    pub async fn run_until_stopped(self) -> Result<(), String> {
        let Application { api, metrics, reaching, .. } = self;
        let handle = api.handle();
        if let Some((metrics, _)) = metrics {
            actix_web::rt::spawn(metrics);
        }
        let Some(reaching) = reaching else { return api.await.map_err(failed) };
        let (why, api) = match select(api, reaching).await {
            Either::Left((served, _)) => return served.map_err(failed),
            Either::Right((Ok(Ok(())), api)) => return api.await.map_err(failed),
            Either::Right((Ok(Err(why)), api)) => (why, api),
            Either::Right((Err(_), api)) => {
                ("the thread that reaches the database ended without reaching it".to_owned(), api)
            }
        };
        // The server's future runs its stop: dropped, the stop would never complete.
        let stopped = handle.stop(false);
        let _ = api.await;
        stopped.await;
        Err(why)
    }
}

/// The token lifetimes `config` sets; `--demo`'s access tokens live a day.
fn lifetimes(config: &ServeConfig) -> TokenLifetimes {
    let mut lifetimes = config.tokens.lifetimes();
    if config.demo {
        lifetimes.access = Duration::from_secs(demo::ACCESS_TOKEN_TTL);
    }
    lifetimes
}

fn failed(e: std::io::Error) -> String {
    format!("server failed: {e}")
}

fn bind(address: SocketAddr, purpose: &str) -> Result<TcpListener, String> {
    TcpListener::bind(address).map_err(|e| format!("cannot listen{purpose} on {address}: {e}"))
}

fn local_address(listener: &TcpListener, configured: SocketAddr) -> Result<SocketAddr, String> {
    listener.local_addr().map_err(|e| format!("cannot listen on {configured}: {e}"))
}

/// Has the database report its committed batches' sizes (the SQLite writer's, PostgreSQL's
/// batched statement's) to the metrics, where those are on.
fn observe_batches(db: &Database, metrics: &Arc<Metrics>) {
    if !metrics.is_on() {
        return;
    }
    let metrics = Arc::clone(metrics);
    db.observe_batches(Box::new(move |batch| metrics.batch_committed(batch)));
}

/// Reaches PostgreSQL on a thread of its own, trying again for at most `wait`
/// ([`Database::reach_within`]) while the server answers `/readyz` 503. The receiver gets
/// `Ok` once the database was reached and migrated, else why the server must stop; a
/// thread that ends without a word (it panicked) stops the server too.
fn reach_in_background(
    db: Arc<Database>,
    wait: Duration,
) -> Result<oneshot::Receiver<Result<(), String>>, String> {
    let (reached, receiver) = oneshot::channel();
    let reaching = move || {
        let outcome = match db.reach_within(wait) {
            Ok(applied) => {
                log::info!("the database is reached; migrations applied: {}", applied.len());
                Ok(())
            }
            Err(e) => Err(format!(
                "the database was not ready within {} s of start-up (WPDS_DB_WAIT_SECONDS): {e}",
                wait.as_secs()
            )),
        };
        let _ = reached.send(outcome);
    };
    std::thread::Builder::new()
        .name("wpds-db-start".to_owned())
        .spawn(reaching)
        .map_err(|e| format!("cannot start the thread that reaches the database: {e}"))?;
    Ok(receiver)
}
