//! The routes off the API (the probes, the documents, Swagger UI, the problem pages): each
//! answers `GET` and `HEAD` alike, and every other method with 405 `method_not_allowed`
//! and `Allow: GET, HEAD`, as a problem, as the API's routes do for the methods they lack
//! (the demo's `POST /demo/tokens`: `POST` alone).
//!
//! A `HEAD` runs the `GET` handler: actix-http sends the answer's head (its status and
//! headers, `Content-Length` included) and no body, as RFC 9110 section 9.3.2 asks.

use crate::error::ApiError;
use crate::http::problem;
use actix_web::{FromRequest, Handler, HttpRequest, Resource, Responder, web};

/// The methods every route off the API answers.
pub const ALLOW: [&str; 2] = ["GET", "HEAD"];

/// The resource at `path` whose `GET` and `HEAD` are `handler`; other methods answer 405.
pub fn get<F, Args>(path: &str, handler: F) -> Resource
where
    F: Handler<Args> + Clone,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
        .default_service(web::to(method_not_allowed))
}

/// The resource at `path` whose `POST` is `handler` (the demo's `/demo/tokens`, which
/// makes something at every call); other methods answer 405 with `Allow: POST`.
pub fn post<F, Args>(path: &str, handler: F) -> Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    web::resource(path).route(web::post().to(handler)).default_service(web::to(
        |req: HttpRequest| async move { problem::respond(&req, ApiError::MethodNotAllowed(vec!["POST"])) },
    ))
}

/// 404 `not_found` for a path no route serves (the application's default service, and a
/// file Swagger UI does not have).
pub async fn no_route(req: HttpRequest) -> actix_web::HttpResponse {
    let detail = format!("There is no route {}.", req.path());
    problem::respond(&req, ApiError::NotFound(detail))
}

/// 405 with `Allow: GET, HEAD`.
async fn method_not_allowed(req: HttpRequest) -> actix_web::HttpResponse {
    problem::respond(&req, ApiError::MethodNotAllowed(ALLOW.to_vec()))
}
