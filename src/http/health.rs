//! Liveness (`/healthz`) and readiness (`/readyz`) probes.

use crate::error::ApiError;
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
    let db = std::sync::Arc::clone(&state.db);
    match web::block(move || db.ping()).await {
        Ok(Ok(())) => HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })),
        Ok(Err(unavailable)) => problem::respond(&req, unavailable.into()),
        Err(blocking) => problem::respond(&req, ApiError::Internal(blocking.to_string())),
    }
}
