//! The pipeline every contract operation runs through before and after its handler.
//!
//! In the contract's order of precedence (unknown routes and methods are answered by the
//! router before this runs):
//! 1. 401 (and 429), then 400 for a path parameter that breaks its schema, then 403, for
//!    operations the document secures (see [`crate::http::auth`]);
//! 2. 406 when `Accept` excludes JSON;
//! 3. 413 for a body over [`BODY_LIMIT`], 415 for a body that is not JSON or comes with a
//!    `Content-Encoding` other than `identity`; the body is read through [`BodyReader`]:
//!    within its deadline (408 otherwise, and the connection closes) and within the memory
//!    every body in flight may hold together (a reader waits for its share);
//! 4. 400 when the path, query or body breaks the document's schemas (every violation);
//!    then, for operations that document 422, 422 for any string holding U+0000, which
//!    not every engine can store;
//! 5. the handler, with typed input; its success body goes out with the operation's
//!    documented status, its error through [`crate::http::problem`].
//!
//! A server built with the `bench-unchecked` feature (for `scripts/bench` only) skips step
//! 4's schema checks: it reads the request into the same values without judging them.
//!
//! A panic anywhere in a handler is caught, logged and answered as 500 `internal`.

use crate::error::ApiError;
use crate::http::{auth, problem, request_id};
use crate::operations::{Operation, Reply, RequestContext};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, CONTENT_LENGTH, CONTENT_TYPE, Header};
use actix_web::web::{Bytes, BytesMut, Data, Payload};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, mime};
use futures_util::{FutureExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};
use wpds_contract::types::{ProblemError, ProblemErrorIn};
use wpds_contract::validation::{Contract, ValidRequest, nul_characters};

/// The largest request body accepted (1 MiB).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// How much memory a body takes while it is processed, as a multiple of its length: the
/// bytes, the parsed JSON tree (a key of a few bytes becomes a map entry, a string and a
/// number of their own) and the checks' output. Measured: a 1 MiB body of 80 000 short
/// unknown keys takes about 35× its length in a debug build.
pub const BODY_EXPANSION: usize = 48;

/// How request bodies are read: each within a deadline, all of them together within a
/// memory budget.
#[derive(Debug, Clone)]
pub struct BodyReader {
    /// The longest a body may take to arrive, from the moment the server starts reading it.
    pub timeout: Duration,
    /// The memory every body being read or processed may take together; each reader takes
    /// its share ([`BODY_EXPANSION`] × its declared length, or × [`BODY_LIMIT`] when
    /// undeclared, never more than the whole budget) before reading and gives it back once
    /// its answer is ready.
    memory: Arc<Semaphore>,
    budget: usize,
}

impl BodyReader {
    /// A reader with a body deadline of `timeout` and `memory` bytes for all bodies.
    pub fn new(timeout: Duration, memory: usize) -> Self {
        let budget = memory.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        BodyReader { timeout, memory: Arc::new(Semaphore::new(budget)), budget }
    }

    /// The share of the budget a body of `declared` bytes (unknown: the limit) takes.
    fn share(&self, declared: Option<u64>) -> u32 {
        let length = declared.map_or(BODY_LIMIT, |len| len as usize).max(1);
        // Never more than the whole budget, so the largest allowed body can always run.
        length.saturating_mul(BODY_EXPANSION).min(self.budget) as u32
    }
}

/// A validated request, read into the operation's generated types on demand.
pub struct Input {
    valid: ValidRequest,
}

impl Input {
    /// The path parameters.
    pub fn path<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        typed(self.valid.path.clone(), ProblemErrorIn::Path)
    }

    /// The query parameters.
    pub fn query<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        typed(self.valid.query.clone(), ProblemErrorIn::Query)
    }

    /// The body.
    pub fn body<T: DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        typed(self.valid.body.take().unwrap_or_default(), ProblemErrorIn::Body)
    }
}

/// Reads validated JSON into a generated type. The schema has already accepted the value,
/// so a failure here means the generated type is narrower than the schema: it is still
/// the client's value that cannot be taken, so it answers 400, never 500.
fn typed<T: DeserializeOwned>(value: serde_json::Value, location: ProblemErrorIn) -> Result<T, ApiError> {
    serde_json::from_value(value).map_err(|e| {
        log::warn!("a value the schema accepts does not fit the generated type: {e}");
        ApiError::Validation(
            vec![ProblemError::new(location, "", "type", "a value this server cannot represent")].into(),
        )
    })
}

/// Runs the pipeline for `op` and then `handler`.
pub async fn dispatch<F, Fut, T>(
    op: &'static Operation,
    req: HttpRequest,
    payload: Payload,
    handler: F,
) -> HttpResponse
where
    F: FnOnce(RequestContext, Input) -> Fut,
    Fut: Future<Output = Result<Reply<T>, ApiError>>,
    T: Serialize,
{
    let budget =
        req.app_data::<Data<AppState>>().map_or(std::time::Duration::ZERO, |state| state.db.timeout());
    let outcome = crate::state::with_db_budget(
        budget,
        AssertUnwindSafe(run(op, &req, payload, handler)).catch_unwind(),
    )
    .await;
    let mut response = match outcome {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => problem::respond(&req, error),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            problem::respond(&req, ApiError::Internal(format!("{} panicked: {what}", op.id)))
        }
    };
    // The caller's rate-limit standing, on every answer of a limited operation.
    if let Some(standing) = req.extensions().get::<crate::http::rate_limit::Standing>() {
        for (name, value) in standing.headers() {
            if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
    }
    response
}

async fn run<F, Fut, T>(
    op: &'static Operation,
    req: &HttpRequest,
    payload: Payload,
    handler: F,
) -> Result<HttpResponse, ApiError>
where
    F: FnOnce(RequestContext, Input) -> Fut,
    Fut: Future<Output = Result<Reply<T>, ApiError>>,
    T: Serialize,
{
    let state = req
        .app_data::<Data<AppState>>()
        .ok_or_else(|| ApiError::Internal("the application state is not registered".to_owned()))?;
    let contract = req
        .app_data::<Data<Contract>>()
        .ok_or_else(|| ApiError::Internal("the contract is not registered".to_owned()))?;
    let path: Vec<(&str, &str)> = req.match_info().iter().collect();
    // Checked once: before authorisation for a secured operation, else with the rest.
    let path_checked = std::cell::Cell::new(false);
    let check_path = || {
        path_checked.set(true);
        contract.validate_path(op.id, &path).map_err(ApiError::Validation)
    };
    let caller = auth::check(op, req, state, check_path).await?;
    let ctx = RequestContext { request_id: request_id::of(req), caller };
    negotiate(req)?;
    // Held until the answer is ready: the parsed body and the checks' output grow with it.
    let mut _memory = None;
    let body = if op.has_body {
        let (body, share) = read_body(req, payload).await?;
        _memory = Some(share);
        Some(body)
    } else {
        None
    };
    #[cfg(not(feature = "bench-unchecked"))]
    let valid = if path_checked.get() {
        contract.validate_after_path(op.id, &path, req.query_string(), body.as_deref())
    } else {
        contract.validate(op.id, &path, req.query_string(), body.as_deref())
    }
    .map_err(ApiError::Validation)?;
    #[cfg(feature = "bench-unchecked")]
    let valid = contract
        .read_unchecked(op.id, &path, req.query_string(), body.as_deref())
        .map_err(ApiError::Validation)?;
    if op.statuses.contains(&422) {
        let nul = nul_characters(&valid);
        if !nul.is_empty() {
            return Err(ApiError::Unprocessable {
                code: "unprocessable",
                detail: "Text holding U+0000 (NUL) cannot be stored.".to_owned(),
                errors: nul,
            });
        }
    }
    drop(body);
    let reply = handler(ctx, Input { valid }).await?;
    let status = StatusCode::from_u16(op.success_status)
        .map_err(|e| ApiError::Internal(format!("{}: bad success status: {e}", op.id)))?;
    let body = serde_json::to_vec(&reply.body)
        .map_err(|e| ApiError::Internal(format!("{}: cannot serialise the reply: {e}", op.id)))?;
    let mut response = HttpResponse::build(status);
    response.insert_header((CONTENT_TYPE, "application/json"));
    for (name, value) in reply.headers {
        response.insert_header((name, value));
    }
    Ok(response.body(body))
}

/// 406 unless `Accept` (when sent) admits `application/json`.
fn negotiate(req: &HttpRequest) -> Result<(), ApiError> {
    if !req.headers().contains_key(header::ACCEPT) {
        return Ok(());
    }
    // An Accept header that does not parse is ignored, as RFC 9110 allows.
    let Ok(accept) = header::Accept::parse(req) else {
        return Ok(());
    };
    let admits_json = accept.iter().any(|item| {
        let mime = &item.item;
        item.quality > header::Quality::ZERO
            && (mime.type_() == mime::STAR
                || (mime.type_() == mime::APPLICATION
                    && (mime.subtype() == mime::STAR || mime.subtype() == mime::JSON)))
    });
    if admits_json { Ok(()) } else { Err(ApiError::NotAcceptable) }
}

/// Reads the body up to [`BODY_LIMIT`]: 413 above it, 415 when a non-empty body is not
/// declared as JSON (`application/json` or a `+json` type) or is encoded; 408 when it does
/// not arrive within the [`BodyReader`]'s timeout; 503 when the memory for bodies stays
/// taken that long. Returns the body and its share of that memory.
async fn read_body(
    req: &HttpRequest,
    mut payload: Payload,
) -> Result<(Bytes, tokio::sync::OwnedSemaphorePermit), ApiError> {
    let reader = req
        .app_data::<Data<BodyReader>>()
        .ok_or_else(|| ApiError::Internal("the body reader is not registered".to_owned()))?;
    let declared_length =
        req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared_length.is_some_and(|len| len > BODY_LIMIT as u64) {
        return Err(ApiError::PayloadTooLarge(BODY_LIMIT));
    }
    let mime = req.mime_type().ok().flatten();
    let is_json = mime.as_ref().is_some_and(|m| {
        m.type_() == mime::APPLICATION && (m.subtype() == mime::JSON || m.suffix() == Some(mime::JSON))
    });
    let has_content_type = req.headers().contains_key(CONTENT_TYPE);
    if has_content_type && !is_json {
        return Err(ApiError::UnsupportedMediaType);
    }
    // A compressed body would otherwise be read as if its bytes were the JSON itself.
    let encoded = req.headers().get_all(header::CONTENT_ENCODING).any(|value| {
        value
            .to_str()
            .map_or(true, |v| v.split(',').any(|coding| !coding.trim().eq_ignore_ascii_case("identity")))
    });
    if encoded {
        return Err(ApiError::UnsupportedMediaType);
    }
    let deadline = Instant::now() + reader.timeout;
    let memory =
        timeout_at(deadline, Arc::clone(&reader.memory).acquire_many_owned(reader.share(declared_length)))
            .await
            .map_err(|_| ApiError::Overloaded(1))?
            .map_err(|e| ApiError::Internal(format!("the body memory budget is closed: {e}")))?;
    let mut body = BytesMut::with_capacity(declared_length.map_or(0, |len| len as usize));
    loop {
        let chunk = match timeout_at(deadline, payload.next()).await {
            Err(_) => return Err(ApiError::RequestTimeout(reader.timeout)),
            Ok(None) => break,
            Ok(Some(chunk)) => chunk,
        };
        let chunk = chunk.map_err(|e| {
            ApiError::Validation(
                vec![ProblemError::new(
                    ProblemErrorIn::Body,
                    "",
                    "json",
                    format!("the body could not be read: {e}"),
                )]
                .into(),
            )
        })?;
        if body.len() + chunk.len() > BODY_LIMIT {
            return Err(ApiError::PayloadTooLarge(BODY_LIMIT));
        }
        body.extend_from_slice(&chunk);
    }
    if !body.is_empty() && !has_content_type {
        return Err(ApiError::UnsupportedMediaType);
    }
    Ok((body.freeze(), memory))
}

/// The answer for a method a known path does not have: 405 with `Allow`.
pub async fn method_not_allowed(req: HttpRequest, allow: &'static [&'static str]) -> HttpResponse {
    problem::respond(&req, ApiError::MethodNotAllowed(allow.to_vec()))
}
