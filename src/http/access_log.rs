//! The access log: one line per request at `info` under the target `wpds::access`, written
//! by the edge middleware once the answer is ready (so every request has one, refused or
//! not, operation or probe).
//!
//! The message is the classic line (`client "METHOD /path?query HTTP/1.1" status bytes
//! 1.234ms request_id=…`); its key-values, which the JSON log format writes as fields, are
//! `requestId` (the `X-Request-Id` answered, also the problem bodies' `traceId`), `traceId`
//! and `spanId` (the W3C ids of the request's trace and server span, when it has them: see
//! [`Ids`]), `operationId` (for the contract's operations), `method`, `route` (the path
//! template, never the path with its ids), `status`, `durationMs`, `clientAddress` (through
//! trusted proxies, as the rate limit counts it) and `userId` where authentication named
//! one. Never a token, a header value or a body; in the query, the values of credential-like
//! keys (`access_token`, `api_key`, `password`, signatures, …) are `REDACTED`, by the same
//! function as the server span's `url.query` ([`crate::logging::redaction::redacted_query`]).

use crate::state::AppState;
use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::web::Data;
use actix_web::{HttpMessage, HttpRequest};
use std::time::Duration;

/// The log target of access lines (`WPDS_LOG=wpds::access=off` silences them).
pub const TARGET: &str = "wpds::access";

/// The operation a request was routed to (set by the pipeline).
#[derive(Debug, Clone, Copy)]
pub struct Routed(pub &'static crate::http::operation::Operation);

/// The user authentication named (set by the pipeline).
#[derive(Debug, Clone, Copy)]
pub struct UserId(pub i64);

/// Whether access lines are written at all (fixed at start-up with the log filter).
pub fn enabled() -> bool {
    log::log_enabled!(target: TARGET, log::Level::Info)
}

/// The client's address as the rate limit counts it: the peer, or through trusted proxies
/// the nearest untrusted `X-Forwarded-For` address.
pub fn client_address(req: &HttpRequest) -> Option<std::net::IpAddr> {
    let peer = req.peer_addr()?.ip();
    let Some(state) = req.app_data::<Data<AppState>>() else { return Some(peer) };
    Some(state.limiter.client_address(peer, req.headers()))
}

/// The ids an access line joins logs and traces by.
#[derive(Debug, Clone, Copy)]
pub struct Ids<'a> {
    /// The request's `X-Request-Id` (the client's, else the trace's id, else minted).
    pub request_id: &'a str,
    /// The W3C trace id: of the server span when tracing is on, else of an incoming
    /// `traceparent`; none without either.
    pub trace_id: Option<&'a str>,
    /// The server span's id (when tracing is on; sampled or not).
    pub span_id: Option<&'a str>,
}

/// Writes the access line of `response`, answered after `elapsed`, with its `ids`.
pub fn write(response: &ServiceResponse<BoxBody>, elapsed: Duration, ids: Ids<'_>) {
    let req = response.request();
    let status = response.status().as_u16();
    let bytes = match response.response().body().size() {
        BodySize::Sized(n) => n.to_string(),
        BodySize::None => "0".to_owned(),
        BodySize::Stream => "-".to_owned(),
    };
    let client = client_address(req).map_or_else(|| "-".to_owned(), |a| a.to_string());
    let route = req.match_pattern().unwrap_or_else(|| "-".to_owned());
    let extensions = req.extensions();
    let operation_id = extensions.get::<Routed>().map(|o| o.0.id);
    // A string, as every id of the API (and so never rounded by a JSON reader).
    let user_id = extensions.get::<UserId>().map(|u| u.0.to_string());
    let millis = elapsed.as_secs_f64() * 1000.0;
    let query = match crate::logging::redaction::redacted_query(req.query_string()) {
        query if query.is_empty() => String::new(),
        query => format!("?{query}"),
    };
    log::info!(
        target: TARGET,
        requestId = ids.request_id,
        traceId = ids.trace_id,
        spanId = ids.span_id,
        operationId = operation_id,
        method = req.method().as_str(),
        route = route.as_str(),
        status = status,
        durationMs = (millis * 1000.0).round() / 1000.0,
        clientAddress = client.as_str(),
        userId = user_id.as_deref();
        "{client} \"{} {}{query} {:?}\" {status} {bytes} {millis:.3}ms request_id={}",
        req.method(),
        req.path(),
        req.version(),
        ids.request_id
    );
}
