//! The pipeline every contract operation runs through before and after its handler.
//!
//! In the contract's order of precedence (unknown routes and methods are answered by the
//! router before this runs):
//! 1. 401 (and 429), then 400 for a path parameter that breaks its schema, then 403, for
//!    operations the document secures (see [`crate::http::auth`]);
//! 2. 406 when `Accept` excludes JSON;
//! 3. 413 for a body over [`body::BODY_LIMIT`], 415 for a body that is not JSON or comes
//!    with a `Content-Encoding` other than `identity`; the body is read through
//!    [`body::BodyReader`]: within its deadline (408 otherwise, and the connection closes)
//!    and within the memory every body in flight may hold together (see [`body`]);
//! 4. 400 when the path, query, declared headers or body break the document's schemas
//!    (every violation);
//!    then, for operations that document 422, 422 for any string holding U+0000, which
//!    not every engine can store;
//! 5. the handler, with typed input; its answer (the operation's generated `…Response`,
//!    whose variants are the documented successes) goes out with that status, body and
//!    headers, its error through [`crate::http::problem`].
//!
//! A panic anywhere in a handler is caught, logged and answered as 500 `internal`.

use crate::error::ApiError;
use crate::http::auth::{self, Checked, Refused};
use crate::http::off_worker::{self, OffWorker};
use crate::http::operation::{Operation, RequestContext, Respond};
use crate::http::{access_log, body, problem, request_id};
use crate::rate_limit::Standing;
use crate::state::AppState;
use crate::telemetry;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, CONTENT_TYPE, Header};
use actix_web::web::{Data, Payload};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, mime};
use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use wpds_contract::problem::ProblemCode;
use wpds_contract::types::{ProblemError, ProblemErrorIn};
use wpds_contract::validation::{
    Contract, HeaderSource, RawRequest, ValidRequest, Violations, nul_characters,
};

/// A validated request, read into the operation's generated types on demand.
pub struct Input {
    valid: ValidRequest,
}

impl Input {
    /// The path parameters (taken: each part is read once).
    pub fn path<T: DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        typed(self.valid.path.take(), ProblemErrorIn::Path)
    }

    /// The query parameters (taken).
    pub fn query<T: DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        typed(self.valid.query.take(), ProblemErrorIn::Query)
    }

    /// The declared header parameters (taken).
    pub fn headers<T: DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        typed(self.valid.headers.take(), ProblemErrorIn::Header)
    }

    /// The body (taken).
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

/// The request's headers, as validation reads the declared header parameters.
struct RequestHeaders<'a>(&'a actix_web::http::header::HeaderMap);

impl HeaderSource for RequestHeaders<'_> {
    fn header(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
    }
}

/// Runs the pipeline for `op` and then `handler`.
pub async fn dispatch<F, Fut, R>(
    op: &'static Operation,
    req: HttpRequest,
    payload: Payload,
    handler: F,
) -> HttpResponse
where
    F: FnOnce(RequestContext, Input) -> Fut,
    Fut: Future<Output = Result<R, ApiError>>,
    R: Respond,
{
    // Boxed once, here: the pipeline's future holds every step's state (validation, the
    // handler's, the database call's), several kilobytes that each wrapper below and
    // actix-web's own boxing would otherwise copy again on every request.
    let pipeline = Box::pin(run(op, &req, payload, handler));
    let (mut response, standing) = match AssertUnwindSafe(pipeline).catch_unwind().await {
        Ok(Answered { standing, outcome: Ok(response) }) => (response, standing),
        Ok(Answered { standing, outcome: Err(error) }) => (problem::respond(&req, error), standing),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            (problem::respond(&req, ApiError::Internal(format!("{} panicked: {what}", op.id))), None)
        }
    };
    if body::closes_connection(&req) {
        response.head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
    }
    // The caller's rate-limit standing, on every answer of a limited operation.
    for (name, value) in standing.iter().flat_map(Standing::headers) {
        if let Ok(value) = header::HeaderValue::from_str(&value) {
            response.headers_mut().insert(header::HeaderName::from_static(name), value);
        }
    }
    response
}

/// What the pipeline answered, and the standing of the rate limit the request counted
/// against (for the answer's `RateLimit` fields, whatever the answer).
struct Answered {
    standing: Option<Standing>,
    outcome: Result<HttpResponse, ApiError>,
}

/// The pipeline: the 401, 429, 400 (path) and 403 steps, then [`serve`].
async fn run<F, Fut, R>(op: &'static Operation, req: &HttpRequest, payload: Payload, handler: F) -> Answered
where
    F: FnOnce(RequestContext, Input) -> Fut,
    Fut: Future<Output = Result<R, ApiError>>,
    R: Respond,
{
    let registered = req.app_data::<Data<AppState>>().zip(req.app_data::<Data<Contract>>());
    let Some((state, contract)) = registered else {
        let missing =
            ApiError::Internal("the application state or the contract is not registered".to_owned());
        return Answered { standing: None, outcome: Err(missing) };
    };
    req.extensions_mut().insert(access_log::Routed(op));
    let path: Vec<(&str, &str)> = req.match_info().iter().collect();
    // Checked once: before authorisation for a secured operation, else with the rest.
    let path_checked = std::cell::Cell::new(false);
    let check_path = || {
        path_checked.set(true);
        contract.validate_path(op.id, &path).map_err(ApiError::Validation)
    };
    // The request's time for the database, for authentication, membership and its work.
    let budget = state.budget();
    // Parsed once: the membership check and the handler both read it.
    let workspace_id = req.match_info().get("workspaceId").and_then(wpds_storage::ids::parse);
    let checked = auth::check(op, req, state, &budget, workspace_id, check_path);
    let Checked { caller, standing } = match telemetry::as_event("authentication", checked).await {
        Ok(checked) => checked,
        Err(Refused { error, standing }) => return Answered { standing, outcome: Err(error) },
    };
    if let Some(caller) = &caller {
        req.extensions_mut().insert(access_log::UserId(caller.user_id));
    }
    let ctx = RequestContext { request_id: request_id::of(req), caller, budget, workspace_id };
    let checks = Checks { contract, path: &path, path_checked: path_checked.get() };
    Answered { standing, outcome: serve(op, req, payload, checks, ctx, handler).await }
}

/// What [`serve`] needs of the contract's checks.
struct Checks<'a> {
    contract: &'a Data<Contract>,
    /// The path's parameters, as routed.
    path: &'a [(&'a str, &'a str)],
    /// Whether they were checked already (before authorisation).
    path_checked: bool,
}

/// The steps after authorisation: 406, the body (413, 415, 408), 400 for what breaks the
/// document's schemas, 422 for U+0000, then the handler and its answer.
async fn serve<F, Fut, R>(
    op: &'static Operation,
    req: &HttpRequest,
    payload: Payload,
    checks: Checks<'_>,
    ctx: RequestContext,
    handler: F,
) -> Result<HttpResponse, ApiError>
where
    F: FnOnce(RequestContext, Input) -> Fut,
    Fut: Future<Output = Result<R, ApiError>>,
    R: Respond,
{
    let Checks { contract, path, path_checked } = checks;
    negotiate(req)?;
    // Held until the answer is ready: the parsed body and the checks' output grow with it.
    let mut _memory = None;
    let body = if op.has_body {
        let (body, share) = body::read(req, payload).await?;
        _memory = Some(share);
        Some(body)
    } else {
        None
    };
    let large = body.as_ref().filter(|body| body.len() > off_worker::OFF_WORKER_BYTES);
    let valid = match (large, req.app_data::<Data<OffWorker>>()) {
        (Some(large), Some(pool)) => {
            // Owned, for the pool's thread: the body's bytes are shared, not copied.
            let contract = Data::clone(contract).into_inner();
            let path: Vec<(String, String)> =
                path.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            let (query, headers, body) =
                (req.query_string().to_owned(), req.headers().clone(), large.clone());
            let check = move || {
                let path: Vec<(&str, &str)> = path.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let raw = RawRequest {
                    path: &path,
                    query: &query,
                    headers: &RequestHeaders(&headers),
                    body: Some(&body),
                };
                validate(&contract, op, path_checked, raw)
            };
            telemetry::as_event("validation", pool.run(check)).await?
        }
        _ => {
            let raw = RawRequest {
                path,
                query: req.query_string(),
                headers: &RequestHeaders(req.headers()),
                body: body.as_deref(),
            };
            telemetry::as_event("validation", async { validate(contract, op, path_checked, raw) }).await
        }
    }
    .map_err(ApiError::Validation)?;
    if op.statuses.contains(&422) && may_hold_nul(body.as_deref(), req.query_string(), path) {
        let nul = nul_characters(&valid);
        if !nul.is_empty() {
            return Err(ApiError::Unprocessable {
                code: ProblemCode::Unprocessable,
                detail: "Text holding U+0000 (NUL) cannot be stored.".to_owned(),
                errors: nul,
            });
        }
    }
    drop(body);
    let answer = handler(ctx, Input { valid }).await?.into_answer()?;
    let status = StatusCode::from_u16(answer.status)
        .map_err(|e| ApiError::Internal(format!("{}: bad status {}: {e}", op.id, answer.status)))?;
    let mut response = HttpResponse::build(status);
    for (name, value) in answer.headers {
        let value = header::HeaderValue::try_from(value)
            .map_err(|e| ApiError::Internal(format!("{}: header {name} cannot be sent: {e}", op.id)))?;
        response.insert_header((header::HeaderName::from_static(name), value));
    }
    Ok(match answer.body {
        Some(body) => response.insert_header((CONTENT_TYPE, "application/json")).body(body),
        None => response.finish(),
    })
}

/// The document's checks of `raw` for `op`; its path is read, not checked again, when
/// `path_checked` (checked before authorisation).
fn validate(
    contract: &Contract,
    op: &Operation,
    path_checked: bool,
    raw: RawRequest<'_>,
) -> Result<ValidRequest, Violations> {
    if path_checked { contract.validate_after_path(op.id, raw) } else { contract.validate(op.id, raw) }
}

/// Whether any string of the request can hold U+0000, judged on the raw input: JSON writes
/// it only as the escape `\u0000`, a query string as `%00` (or a raw NUL), and a path
/// parameter arrives decoded. Most requests hold none, and are spared the walk over every
/// string of the validated request that names the field ([`nul_characters`]); a false
/// "maybe" (an escaped backslash before `u0000`) only costs that walk.
fn may_hold_nul(body: Option<&[u8]>, query: &str, path: &[(&str, &str)]) -> bool {
    body.is_some_and(|b| memchr::memmem::find(b, b"\\u0000").is_some())
        || query.contains("%00")
        || query.contains('\0')
        || path.iter().any(|(_, value)| value.contains('\0'))
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

/// The answer for a method a known path does not have: 405 with `Allow`.
pub async fn method_not_allowed(req: HttpRequest, allow: &'static [&'static str]) -> HttpResponse {
    problem::respond(&req, ApiError::MethodNotAllowed(allow.to_vec()))
}
