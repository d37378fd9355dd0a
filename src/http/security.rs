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

use actix_web::http::header::{
    CONTENT_SECURITY_POLICY, HeaderMap, HeaderValue, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};

/// The policy of every response but Swagger UI's: nothing may load from it or frame it.
pub const API_POLICY: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Swagger UI's policy: its own scripts and styles (the UI sets inline styles), images
/// from this origin or `data:` URIs, requests to this origin only, never framed.
pub const DOCS_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'; object-src 'none'";

// The values, checked once at compile time (`from_static` is a `const fn`); called at run
// time on a policy chosen at run time, it would check the ~250 bytes on every response.
const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");
const DENY: HeaderValue = HeaderValue::from_static("DENY");
const NO_REFERRER: HeaderValue = HeaderValue::from_static("no-referrer");
const API_CSP: HeaderValue = HeaderValue::from_static(API_POLICY);
const DOCS_CSP: HeaderValue = HeaderValue::from_static(DOCS_POLICY);

/// Adds the security headers to a response; `docs` for Swagger UI's pages.
pub fn add_headers(headers: &mut HeaderMap, docs: bool) {
    headers.reserve(4); // one growth of the map, not one per field
    headers.insert(X_CONTENT_TYPE_OPTIONS, NOSNIFF);
    headers.insert(X_FRAME_OPTIONS, DENY);
    headers.insert(REFERRER_POLICY, NO_REFERRER);
    headers.insert(CONTENT_SECURITY_POLICY, if docs { DOCS_CSP } else { API_CSP });
}

/// Whether `path` is one of Swagger UI's pages.
pub fn is_docs(path: &str) -> bool {
    path == "/docs" || path.starts_with("/docs/")
}
