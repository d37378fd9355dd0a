//! Cross-origin requests from browser pages (`WPDS_CORS_ORIGINS`): the allowlisted origins
//! may call every operation with a bearer token; a preflight is answered here, before the
//! request reaches authentication (a preflight carries no token); every other origin gets
//! no CORS headers, so the browser keeps the answer from its page.
//!
//! actix-cors does the protocol. Two choices differ from its defaults: a request from an
//! origin not on the list is served as if it had no `Origin` (no CORS headers; the browser
//! blocks it) instead of refused with a bare 400, so non-browser clients that send an
//! `Origin` are not broken; and the exposed headers are the ones a client of this API reads.

use actix_cors::Cors;
use actix_web::http::header::{self, HeaderName};

/// The response headers a browser page may read.
pub const EXPOSED: [&str; 6] =
    ["x-request-id", "retry-after", "idempotent-replayed", "location", "ratelimit-policy", "ratelimit"];

/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE: usize = 600;

/// The CORS policy for `origins` (an empty list allows none).
pub fn policy(origins: &[String]) -> Cors {
    let mut cors = Cors::default()
        .allowed_methods(["GET", "PUT", "POST", "PATCH", "DELETE"])
        .allowed_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            HeaderName::from_static("x-request-id"),
        ])
        .expose_headers(EXPOSED.map(HeaderName::from_static))
        .max_age(PREFLIGHT_MAX_AGE)
        .block_on_origin_mismatch(false);
    for origin in origins {
        cors = cors.allowed_origin(origin);
    }
    cors
}
