//! Maps [`ApiError`] to its HTTP status, headers and problem+json body: the only place
//! where errors become responses.

use crate::error::ApiError;
use crate::http::request_id;
use actix_web::http::StatusCode;
use actix_web::http::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use actix_web::{HttpRequest, HttpResponse};
use wpds_contract::types::Problem;

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The problem+json response for `error` to `req`.
pub fn respond(req: &HttpRequest, error: ApiError) -> HttpResponse {
    let trace_id = request_id::of(req);
    let code = error.code();
    let mut headers: Vec<(actix_web::http::header::HeaderName, String)> = Vec::new();
    let mut problem = match error {
        ApiError::Validation(errors) => {
            let n = errors.len();
            Problem::of(
                code,
                format!(
                    "The request does not match the API contract ({n} error{}).",
                    if n == 1 { "" } else { "s" }
                ),
            )
            .with_errors(errors)
        }
        ApiError::Unauthenticated { detail, token_sent } => {
            let challenge = if token_sent { "Bearer error=\"invalid_token\"" } else { "Bearer" };
            headers.push((WWW_AUTHENTICATE, challenge.to_owned()));
            Problem::of(code, detail)
        }
        ApiError::InvalidGrant => {
            headers.push((WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"".to_owned()));
            Problem::of(code, "The refresh token is not valid.")
        }
        ApiError::Forbidden(detail) | ApiError::NotFound(detail) => Problem::of(code, detail),
        ApiError::MethodNotAllowed(allow) => {
            headers.push((ALLOW, allow.join(", ")));
            Problem::of(code, format!("{} is not allowed here; allowed: {}.", req.method(), allow.join(", ")))
        }
        ApiError::NotAcceptable => Problem::of(code, "This operation answers application/json only."),
        ApiError::PayloadTooLarge(limit) => Problem::of(code, format!("The body exceeds {limit} bytes.")),
        ApiError::UnsupportedMediaType => Problem::of(code, "The body must be sent as application/json."),
        ApiError::Conflict(conflict) => {
            let mut problem = Problem::of(code, conflict.detail);
            problem.current_version = conflict.current_version;
            problem.current_revision = conflict.current_revision;
            problem.current = conflict.current.map(|value| match value {
                serde_json::Value::Object(map) => Some(map),
                _ => None,
            });
            problem.conflicts = conflict.conflicts;
            problem.errors = conflict.errors;
            problem
        }
        ApiError::Unprocessable { detail, errors, .. } => Problem::of(code, detail).with_errors(errors),
        ApiError::RateLimited(seconds) => {
            headers.push((RETRY_AFTER, seconds.to_string()));
            Problem::of(code, format!("Too many requests for this token; retry after {seconds} s."))
        }
        ApiError::Unavailable(seconds) => {
            headers.push((RETRY_AFTER, seconds.to_string()));
            Problem::of(code, format!("The database is not reachable; retry after {seconds} s."))
        }
        ApiError::Internal(detail) => {
            log::error!("request {trace_id} failed: {detail}");
            Problem::of(code, "An unexpected error occurred; quote the traceId when reporting it.")
        }
    };
    problem.instance = req.path().to_owned();
    problem.trace_id = trace_id;
    let status = StatusCode::from_u16(problem.status as u16).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.insert_header((CONTENT_TYPE, PROBLEM_JSON));
    for header in headers {
        response.insert_header(header);
    }
    match serde_json::to_vec(&problem) {
        Ok(body) => response.body(body),
        Err(e) => {
            log::error!("cannot serialise a problem: {e}");
            HttpResponse::InternalServerError().finish()
        }
    }
}
