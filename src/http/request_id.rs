//! The `X-Request-Id` of every request: echoed when the client sends a well-formed one,
//! minted (a UUID v4) otherwise, stored for handlers and problem bodies, and sent back.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage, HttpRequest};

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

/// The trace id of `req` (minted by [`middleware`]; empty only outside it).
pub fn of(req: &HttpRequest) -> String {
    req.extensions().get::<RequestId>().map(|id| id.0.clone()).unwrap_or_default()
}

/// Middleware: assigns the id before the request runs and sets the response header.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = req
        .headers()
        .get(&HEADER)
        .and_then(|value| value.to_str().ok())
        .filter(|value| is_acceptable(value))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.call(req).await?;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    Ok(response)
}
