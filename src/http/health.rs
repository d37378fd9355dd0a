//! Liveness (`/healthz`) and readiness (`/readyz`) probes.

use actix_web::{HttpResponse, web};

/// Registers the probes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz)).route("/readyz", web::get().to(readyz));
}

/// The process is up and serving HTTP.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// The server can answer operations: its contract is compiled.
async fn readyz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ready" }))
}
