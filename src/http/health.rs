//! Liveness (`/healthz`) and readiness (`/readyz`) probes.

use crate::error::ApiError;
use crate::http::{endpoint, problem};
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, web};

/// Registers the probes (`GET` and `HEAD`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(endpoint::get("/healthz", healthz)).service(endpoint::get("/readyz", readyz));
}

/// The process is up and serving HTTP.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// The server can answer operations: it is not draining for a shutdown, and the database
/// answers a trivial query within the request budget (503 `unavailable` otherwise, at the
/// deadline even on a silent network).
async fn readyz(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if state.draining.load(std::sync::atomic::Ordering::Relaxed) {
        return problem::respond(&req, ApiError::Draining);
    }
    match state.read(&state.budget(), state.db.ping()).await {
        Ok(()) => HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })),
        Err(error) => problem::respond(&req, error),
    }
}
