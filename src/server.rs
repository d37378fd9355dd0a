//! Assembles the actix-web application and starts the HTTP server.

use crate::config::ServeConfig;
use crate::error::ApiError;
use crate::handlers::Service;
use crate::http::{docs, health, problem, request_id};
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
            .wrap(from_fn(request_id::middleware))
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
    server = server.workers(workers).worker_max_blocking_threads(pool_size.div_ceil(workers).max(1));
    Ok(server.listen(listener)?.run())
}

async fn not_found(req: HttpRequest) -> HttpResponse {
    let detail = format!("There is no route {}.", req.path());
    problem::respond(&req, ApiError::NotFound(detail))
}
