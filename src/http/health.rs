//! Liveness (`/healthz`) and readiness (`/readyz`) probes.

use crate::http::problem;
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, web};

/// Registers the probes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz)).route("/readyz", web::get().to(readyz));
}

/// The process is up and serving HTTP.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// The server can answer operations: the database answers a trivial query.
async fn readyz(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match state.run(|conn| wpds_storage::workspaces::count(conn).map(|_| ())).await {
        Ok(()) => HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })),
        Err(error) => problem::respond(&req, error),
    }
}
