//! The `X-Request-Id` of every request: echoed when the client sends a well-formed one,
//! else the W3C trace id of the request's trace (an incoming `traceparent`'s, or the one
//! its server span started when tracing is on), else minted (a UUID v4); stored for
//! handlers and problem bodies (`traceId`), and sent back.

use actix_web::dev::ServiceRequest;
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpMessage, HttpRequest};

/// The header carrying the trace id.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The request's trace id, as stored in its extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

/// Whether an incoming id may be echoed: `^[A-Za-z0-9._:-]{1,128}$`.
pub fn is_acceptable(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The trace id of `req` (given by [`assign`]; empty only outside the middleware).
pub fn of(req: &HttpRequest) -> String {
    req.extensions().get::<RequestId>().map(|id| id.0.clone()).unwrap_or_default()
}

/// Gives `req` its id: the client's `X-Request-Id` when well-formed, else `trace_id` (the
/// trace the request belongs to: an incoming `traceparent`'s, or its own server span's),
/// else a minted UUID v4. Returns it.
pub fn assign(req: &ServiceRequest, trace_id: Option<String>) -> String {
    let id = req
        .headers()
        .get(&HEADER)
        .and_then(|value| value.to_str().ok())
        .filter(|value| is_acceptable(value))
        .map(str::to_owned)
        .or(trace_id)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    req.extensions_mut().insert(RequestId(id.clone()));
    id
}

/// Sends `id` back in the response's `X-Request-Id`.
pub fn set_header(headers: &mut HeaderMap, id: &str) {
    if let Ok(value) = HeaderValue::from_str(id) {
        headers.insert(HEADER, value);
    }
}
