//! The published contract and its documentation: `/openapi.yaml` (the file's exact
//! bytes), `/openapi.json`, `/openapi-3.0.json` (derived by the build), Swagger UI at
//! `/docs/` (vendored, nothing downloaded) and the `/problems/{code}` pages that problem
//! `type` URIs point at.

use crate::error::ApiError;
use crate::http::problem;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use actix_web::{HttpRequest, HttpResponse, web};
use utoipa_swagger_ui::{Config, SwaggerUi};
use wpds_contract::document;
use wpds_contract::problem::ProblemCode;

/// Registers the document routes, Swagger UI and the problem pages.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi.yaml", web::get().to(|| serve("application/yaml", document::YAML)))
        .route("/openapi.json", web::get().to(|| serve("application/json", document::JSON)))
        .route("/openapi-3.0.json", web::get().to(|| serve("application/json", document::JSON_30)))
        .route("/", web::get().to(redirect_to_docs))
        .route("/docs", web::get().to(redirect_to_docs))
        // Before Swagger UI's catch-all under /docs/.
        .route("/docs/openapi.json", web::get().to(|| serve("application/json", ui_document())))
        .service(
            SwaggerUi::new("/docs/{_:.*}").config(
                Config::new(["/docs/openapi.json"])
                    .try_it_out_enabled(true)
                    .persist_authorization(false)
                    .display_operation_id(true),
            ),
        )
        .route("/problems/{code}", web::get().to(problem_page));
}

/// The document as Swagger UI loads it: the published JSON with one relative server (`/`),
/// so "Try it out" calls the origin the page came from, whatever address and port the
/// server runs on. The published documents keep the `{baseUrl}` server for generators.
fn ui_document() -> &'static str {
    static UI: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    UI.get_or_init(|| {
        let mut doc = document::parsed().clone();
        doc["servers"] =
            serde_json::json!([{ "url": "/", "description": "The server this page came from." }]);
        serde_json::to_string(&doc).unwrap_or_else(|_| document::JSON.to_owned())
    })
}

async fn serve(content_type: &'static str, text: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, content_type))
        .insert_header((CACHE_CONTROL, "no-cache"))
        .body(text)
}

async fn redirect_to_docs() -> HttpResponse {
    HttpResponse::PermanentRedirect().insert_header((LOCATION, "/docs/")).finish()
}

/// A short HTML page describing one problem type.
async fn problem_page(req: HttpRequest, code: web::Path<String>) -> HttpResponse {
    let Some(kind) = ProblemCode::from_code(&code) else {
        return problem::respond(&req, ApiError::NotFound(format!("There is no problem type {code}.")));
    };
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
         <body><h1>{title}</h1><p>HTTP status {status}, code <code>{code}</code>.</p><p>{description}</p>\n\
         <p>See the <a href=\"/docs/\">API documentation</a>.</p></body></html>\n",
        title = kind.title(),
        status = kind.status(),
        code = kind.as_str(),
        description = kind.description(),
    );
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(html)
}
