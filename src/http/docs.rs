//! The published contract and its documentation: `/openapi.yaml` (the file's exact
//! bytes), `/openapi.json`, `/openapi-3.0.json` (derived by the build), Swagger UI at
//! `/docs/` (vendored, nothing downloaded) and the `/problems/{code}` pages that problem
//! `type` URIs point at.

use crate::error::ApiError;
use crate::http::{endpoint, problem};
use actix_web::http::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ContentEncoding, LOCATION};
use actix_web::{HttpRequest, HttpResponse, web};
use std::sync::Arc;
use utoipa_swagger_ui::Config;
use wpds_contract::document;
use wpds_contract::problem::ProblemCode;

/// Registers the document routes, Swagger UI and the problem pages, each answering `GET`
/// and `HEAD` (see [`endpoint`]).
pub fn configure(cfg: &mut web::ServiceConfig) {
    let ui_config = web::Data::new(
        Config::new(["/docs/openapi.json"])
            .try_it_out_enabled(true)
            .persist_authorization(false)
            .display_operation_id(true),
    );
    cfg.service(endpoint::get("/openapi.yaml", || serve("application/yaml", document::YAML)))
        .service(endpoint::get("/openapi.json", || serve("application/json", document::JSON)))
        .service(endpoint::get("/openapi-3.0.json", || serve("application/json", document::JSON_30)))
        .service(endpoint::get("/", redirect_to_docs))
        .service(endpoint::get("/docs", redirect_to_docs))
        // Before Swagger UI's catch-all under /docs/.
        .service(endpoint::get("/docs/openapi.json", || serve("application/json", ui_document())))
        .service(endpoint::get("/docs/{file:.*}", swagger_ui).app_data(ui_config))
        .service(endpoint::get("/problems/{code}", problem_page));
}

/// A file of the vendored Swagger UI (its `index.html` for `/docs/`), served by
/// utoipa-swagger-ui's own `serve` (as its actix-web service does, which answers `GET`
/// only); an unknown file is a 404 problem.
async fn swagger_ui(
    req: HttpRequest,
    file: web::Path<String>,
    config: web::Data<Config<'static>>,
) -> HttpResponse {
    match utoipa_swagger_ui::serve(&file, Arc::clone(&config)) {
        Ok(Some(found)) => {
            let mut response = HttpResponse::Ok();
            if found.gzpipped {
                response.insert_header((CONTENT_ENCODING, ContentEncoding::Gzip));
            }
            response.content_type(found.content_type).body(found.bytes.into_owned())
        }
        Ok(None) => endpoint::no_route(req).await,
        Err(error) => problem::respond(&req, ApiError::Internal(format!("Swagger UI: {error}"))),
    }
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
