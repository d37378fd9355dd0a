//! Maps [`ApiError`] to its HTTP status, headers and problem+json body: the only place
//! where errors become responses.
//!
//! [`shape_bare_error`] also catches the error answers that come without a body from code
//! this service does not write (Swagger UI's 404 for a file it does not have, actix-web's
//! own refusals inside the application), so every 4xx and 5xx the service can shape is
//! problem+json. actix-http answers a few protocol errors before any application code
//! runs (a slow or oversized request head, an unparsable one): those stay as it sends
//! them (see `docs/reliability.md`).

use crate::error::ApiError;
use crate::http::request_id;
use crate::state::AppState;
use actix_web::body::BoxBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use actix_web::{HttpRequest, HttpResponse};
use wpds_contract::problem::{MAX_TEXT, count_phrase, cut, listed};
use wpds_contract::types::Problem;

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The problem+json response for `error` to `req`.
pub fn respond(req: &HttpRequest, error: ApiError) -> HttpResponse {
    count_unavailable(req, &error);
    let trace_id = request_id::of(req);
    let code = error.code();
    let mut headers: Vec<(actix_web::http::header::HeaderName, String)> = Vec::new();
    // Whether the connection closes after this answer (the rest of the request may still
    // be on its way, and is not worth reading).
    let mut close = false;
    let mut problem = match error {
        ApiError::Validation(violations) => {
            let count = count_phrase(violations.total, listed(&violations.listed));
            Problem::of(code, format!("The request does not match the API contract ({count})."))
                .with_errors(violations.listed)
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
        ApiError::RequestTimeout(limit) => {
            close = true;
            Problem::of(code, format!("The body did not arrive within {} ms.", limit.as_millis()))
        }
        ApiError::PayloadTooLarge(limit) => Problem::of(code, format!("The body exceeds {limit} bytes.")),
        ApiError::UnsupportedMediaType => Problem::of(
            code,
            "The body must be sent as application/json, with no Content-Encoding other than identity.",
        ),
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
        ApiError::Unprocessable { mut detail, errors, .. } => {
            let (total, shown) = (errors.len(), listed(&errors));
            if shown < total {
                cut(&mut detail, MAX_TEXT / 2);
                detail = format!("{detail} ({})", count_phrase(total, shown));
            }
            Problem::of(code, detail).with_errors(errors)
        }
        ApiError::RateLimited(seconds) => {
            headers.push((RETRY_AFTER, seconds.to_string()));
            Problem::of(code, format!("Too many requests; retry after {seconds} s."))
        }
        ApiError::Unavailable(seconds) => {
            headers.push((RETRY_AFTER, seconds.to_string()));
            Problem::of(code, format!("The database is not reachable; retry after {seconds} s."))
        }
        ApiError::Draining => {
            headers.push((RETRY_AFTER, "1".to_owned()));
            Problem::of(code, "The server is shutting down; another instance answers, or retry after 1 s.")
        }
        ApiError::Overloaded(seconds) => {
            close = true; // the body was not read
            headers.push((RETRY_AFTER, seconds.to_string()));
            Problem::of(code, format!("The server is busy reading other requests; retry after {seconds} s."))
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
    if close {
        response.force_close();
    }
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

/// Counts a 503 by its cause.
fn count_unavailable(req: &HttpRequest, error: &ApiError) {
    use crate::metrics::UnavailableCause;
    let cause = match error {
        ApiError::Unavailable(_) => UnavailableCause::Database,
        ApiError::Overloaded(_) => UnavailableCause::BodyMemory,
        ApiError::Draining => UnavailableCause::Draining,
        _ => return,
    };
    if let Some(state) = req.app_data::<actix_web::web::Data<AppState>>() {
        state.metrics.unavailable(cause);
    }
}

/// Replaces an error answer that has no body (no `Content-Type`) with the problem of its
/// status; any other answer is returned as it is.
pub fn shape_bare_error(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.headers().contains_key(CONTENT_TYPE)
    {
        return response;
    }
    let error = match status {
        StatusCode::NOT_FOUND => {
            ApiError::NotFound(format!("There is nothing at {}.", response.request().path()))
        }
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(crate::http::body::BODY_LIMIT),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType,
        StatusCode::NOT_ACCEPTABLE => ApiError::NotAcceptable,
        StatusCode::SERVICE_UNAVAILABLE => ApiError::Unavailable(1),
        status if status.is_server_error() => {
            ApiError::Internal(format!("{} answered {status} without a body", response.request().path()))
        }
        // A status with no problem type of its own keeps its bare answer.
        _ => return response,
    };
    let (req, _bare) = response.into_parts();
    let shaped = respond(&req, error);
    ServiceResponse::new(req, shaped)
}
