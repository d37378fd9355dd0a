//! Security headers on every response, and the Content-Security-Policy of each kind of
//! page.
//!
//! Every response gets `X-Content-Type-Options: nosniff` (a JSON body is never sniffed
//! into HTML), `X-Frame-Options: DENY` and `Referrer-Policy: no-referrer`. API responses,
//! problem pages and documents get a policy that lets nothing load or frame them;
//! Swagger UI under `/docs/` gets one that lets the vendored UI run from this origin only
//! (its scripts, styles and images, and "Try it out" calls to this server), and never in a
//! frame. Swagger UI keeps a pasted token in memory only (`persistAuthorization` off, see
//! [`crate::http::docs`]), so a token never lands in the browser's storage.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{
    CONTENT_SECURITY_POLICY, HeaderValue, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use actix_web::middleware::Next;

/// The policy of every response but Swagger UI's: nothing may load from it or frame it.
pub const API_POLICY: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Swagger UI's policy: its own scripts and styles (the UI sets inline styles), images
/// from this origin or `data:` URIs, requests to this origin only, never framed.
pub const DOCS_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'; object-src 'none'";

/// Middleware: adds the security headers to every response.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let docs = req.path() == "/docs" || req.path().starts_with("/docs/");
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    let policy = if docs { DOCS_POLICY } else { API_POLICY };
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    Ok(response)
}
