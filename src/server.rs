//! Assembles the actix-web application and starts the HTTP server.

use crate::config::ServeConfig;
use crate::handlers::Service;
use crate::http::body::BodyReader;
use crate::http::off_worker::OffWorker;
use crate::http::{access_log, conformance, cors, docs, edge, endpoint, health};
use crate::operations;
use crate::state::AppState;
use actix_web::middleware::{Condition, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};
use std::io;
use std::net::TcpListener;
use wpds_contract::validation::Contract;

/// Starts serving on `listener`. The returned server runs until it is stopped through its
/// handle ([`stop_on_signal`] does it on SIGTERM or SIGINT): then new connections are
/// refused and in-flight requests get [`ServeConfig::shutdown_grace`] to finish. actix's
/// own signal handling is off, so a drain period can come first.
pub fn start(
    config: &ServeConfig,
    state: AppState,
    listener: TcpListener,
) -> io::Result<actix_web::dev::Server> {
    let contract = web::Data::new(Contract::load().map_err(io::Error::other)?);
    let service = web::Data::new(Service::new(state.clone()));
    let body_reader = web::Data::new(BodyReader::new(
        std::time::Duration::from_millis(config.body_timeout_ms),
        config.body_memory_mib.saturating_mul(1024 * 1024),
    ));
    // Large bodies are checked off the workers, at most one per core at once.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let off_worker = web::Data::new(OffWorker::new(cores)?);
    let state = web::Data::new(state);
    let edge = edge::Edge {
        compress: config.compression,
        access_log: access_log::enabled(),
        metrics: state.metrics.clone(),
        draining: state.draining.clone(),
    };
    let cors_origins = config.cors_origins.clone();
    let demo = config.demo;
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(contract.clone())
            .app_data(state.clone())
            .app_data(service.clone())
            .app_data(body_reader.clone())
            .app_data(off_worker.clone())
            // Inside the edge, so a preflight answer and every CORS-headed answer still get
            // the request id and the security headers.
            .wrap(Condition::new(!cors_origins.is_empty(), cors::policy(&cors_origins)))
            .wrap(from_fn({
                let edge = edge.clone();
                move |req, next| edge.clone().handle(req, next)
            }))
            .configure(health::configure)
            .configure(docs::configure)
            .configure(conformance::configure)
            .configure(|cfg| {
                if demo {
                    crate::demo::tokens::configure(cfg);
                }
            })
            .configure(operations::configure::<Service>)
            .default_service(web::to(endpoint::no_route))
    })
    .client_request_timeout(std::time::Duration::from_millis(config.request_head_timeout_ms))
    .shutdown_timeout(config.shutdown_timeout)
    .disable_signals();
    let workers = worker_count(config);
    let pool_size = usize::try_from(config.database.db_config().connections()).unwrap_or(usize::MAX);
    let connections = connection_cap(workers, pool_size);
    log::info!("accepting at most {connections} connections per worker ({workers} workers)");
    server = server
        .workers(workers)
        .worker_max_blocking_threads(pool_size.div_ceil(workers).max(1))
        .max_connections(connections);
    Ok(server.listen(listener)?.run())
}

/// The worker threads the server runs: the setting, or one per core when it is 0.
pub fn worker_count(config: &ServeConfig) -> usize {
    match config.workers {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    }
}

/// Serves `metrics` at `GET /metrics` (and `HEAD`) on `listener`, a listener of its own (never the
/// API's), with one worker; stopped with the API server by [`stop_on_signal`].
pub fn start_metrics(
    metrics: std::sync::Arc<crate::metrics::Metrics>,
    listener: TcpListener,
) -> io::Result<actix_web::dev::Server> {
    let metrics = web::Data::from(metrics);
    Ok(HttpServer::new(move || {
        App::new().app_data(metrics.clone()).service(endpoint::get(
            "/metrics",
            |metrics: web::Data<crate::metrics::Metrics>| async move {
                HttpResponse::Ok()
                    .content_type("text/plain; version=0.0.4; charset=utf-8")
                    .body(metrics.render())
            },
        ))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run())
}

/// Descriptors kept for everything but client connections: the listener, each worker's
/// event loop, log files, and per database connection up to three (SQLite's file, its WAL
/// and its shared memory; on PostgreSQL one per connection, and the shared connections of
/// single statements are another pool's worth), plus a margin.
pub fn descriptor_reserve(workers: usize, pool_size: usize) -> u64 {
    64 + 4 * workers as u64 + 3 * (pool_size as u64 + 1)
}

/// The most client connections each worker accepts, so the process never runs out of
/// file descriptors (an `accept` failing with "Too many open files" would stall the
/// listener): (the descriptor limit − [`descriptor_reserve`]) ÷ workers, after raising the
/// soft limit to the hard one. Beyond it, new connections wait in the listen backlog.
fn connection_cap(workers: usize, pool_size: usize) -> usize {
    let limit = raise_descriptor_limit();
    let reserve = descriptor_reserve(workers, pool_size);
    let cap = limit.saturating_sub(reserve) / workers.max(1) as u64;
    usize::try_from(cap).unwrap_or(usize::MAX).clamp(1, 25_000)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, as servers commonly do, and returns
/// the soft limit now in force.
fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    limit.rlim_cur
}

/// Waits for SIGTERM or SIGINT, then drains: for `drain` the server keeps accepting and
/// serving while `draining` makes `/readyz` answer 503 (a load balancer takes the instance
/// out); then it stops the servers of `handles` (the API's first, then the metrics
/// listener) gracefully (the listener closes, in-flight requests finish within the
/// shutdown timeout). A second signal during the drain ends it at once.
pub async fn stop_on_signal(
    handles: Vec<actix_web::dev::ServerHandle>,
    draining: std::sync::Arc<std::sync::atomic::AtomicBool>,
    drain: std::time::Duration,
) {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        log::error!("cannot listen for SIGTERM and SIGINT: the server stops only when killed");
        return;
    };
    next_signal(&mut term, &mut int).await;
    draining.store(true, std::sync::atomic::Ordering::Relaxed);
    if !drain.is_zero() {
        log::info!(
            "stop signal received; draining for {} s (readiness answers 503), still serving",
            drain.as_secs()
        );
        let cut_short = futures_util::future::select(
            Box::pin(actix_web::rt::time::sleep(drain)),
            Box::pin(next_signal(&mut term, &mut int)),
        )
        .await;
        if matches!(cut_short, futures_util::future::Either::Right(_)) {
            log::info!("second stop signal: the drain ends early");
        }
    }
    log::info!("stop signal received; starting graceful shutdown");
    for handle in handles {
        handle.stop(true).await;
    }
}

/// The next SIGTERM or SIGINT.
async fn next_signal(
    term: &mut actix_web::rt::signal::unix::Signal,
    int: &mut actix_web::rt::signal::unix::Signal,
) {
    futures_util::future::select(Box::pin(term.recv()), Box::pin(int.recv())).await;
}
