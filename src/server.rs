//! Assembles the actix-web application and starts the HTTP server.

use crate::config::ServeConfig;
use crate::error::ApiError;
use crate::handlers::Service;
use crate::http::dispatch::BodyReader;
use crate::http::{docs, health, problem, request_id, security};
use crate::operations;
use crate::state::AppState;
use actix_web::middleware::{Condition, Logger, from_fn};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use std::io;
use std::net::TcpListener;
use wpds_contract::validation::Contract;

/// The access-log line: client, request line, status, bytes, milliseconds, trace id.
const ACCESS_LOG: &str = r#"%a "%r" %s %b %Dms request_id=%{x-request-id}o"#;

/// Starts serving on `listener`. The returned server runs until it is stopped or the
/// process receives SIGTERM or SIGINT, when in-flight requests get
/// [`ServeConfig::shutdown_grace`] to finish and new connections are refused.
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
    let state = web::Data::new(state);
    // The logger renders parts of its line (client address, request line) as each request
    // arrives, whether or not the line is then written: it is only mounted when the log
    // filter lets its lines through (the filter is fixed at start-up).
    let access_log = log::log_enabled!(target: "actix_web::middleware::logger", log::Level::Info);
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(contract.clone())
            .app_data(state.clone())
            .app_data(service.clone())
            .app_data(body_reader.clone())
            .wrap(from_fn(problem::shape_bare_errors))
            .wrap(from_fn(request_id::middleware))
            .wrap(from_fn(security::middleware))
            .wrap(Condition::new(access_log, Logger::new(ACCESS_LOG)))
            .configure(health::configure)
            .configure(docs::configure)
            .configure(operations::configure::<Service>)
            .default_service(web::to(not_found))
    })
    .shutdown_timeout(config.shutdown_timeout);
    let workers = match config.workers {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let pool_size = usize::try_from(config.database.db_config().pool_size).unwrap_or(usize::MAX);
    let connections = connection_cap(workers, pool_size);
    log::info!("accepting at most {connections} connections per worker ({workers} workers)");
    server = server
        .workers(workers)
        .worker_max_blocking_threads(pool_size.div_ceil(workers).max(1))
        .max_connections(connections);
    Ok(server.listen(listener)?.run())
}

/// Descriptors kept for everything but client connections: the listener, each worker's
/// event loop, log files, and per database connection up to three (SQLite's file, its WAL
/// and its shared memory), plus a margin.
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

async fn not_found(req: HttpRequest) -> HttpResponse {
    let detail = format!("There is no route {}.", req.path());
    problem::respond(&req, ApiError::NotFound(detail))
}
