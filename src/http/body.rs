//! Reading request bodies: each within a deadline, all of them together within a memory
//! budget (`WPDS_BODY_MEMORY_MIB`), so a flood of large bodies cannot grow the server
//! without bound.
//!
//! The budget has two parts:
//! - **processing** (three quarters): a body takes its share, [`BODY_EXPANSION`] × its
//!   declared length, before it is read, and keeps it until its answer is ready (the bytes,
//!   the parsed tree and the checks' output all grow with it). A reader whose share is not
//!   free waits for it, at most until its body deadline (then 503).
//! - **waiting** (a quarter): by the time a handler runs, actix-http has already read up to
//!   [`FRAMEWORK_READ_AHEAD`] of the body into its own buffers, which stay in memory while
//!   the reader waits. Each waiting reader takes a share of this part for them; when it is
//!   full, the request answers 503 `unavailable` with `Retry-After` at once and its
//!   connection closes, which frees those buffers. Without this part, 256 connections
//!   sending 1 MiB bodies held ~75 MiB in actix-http's buffers alone, outside any budget.
//!
//! A connection that sent a body over [`CLOSE_AFTER_BODY`] is closed once answered:
//! actix-http keeps a connection's read buffer at the size it grew to for as long as the
//! connection lives.

use crate::error::ApiError;
use actix_web::http::header::{self, CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::web::{Bytes, BytesMut, Data, Payload};
use actix_web::{HttpMessage, HttpRequest, mime};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, timeout_at};
use wpds_contract::types::{ProblemError, ProblemErrorIn};

/// The largest request body accepted (1 MiB).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// How much memory a body takes while it is processed, as a multiple of its length: the
/// bytes, the parsed JSON tree (a key of a few bytes becomes a map entry, a string and a
/// number of their own) and the checks' output. Measured: a 1 MiB body of 80 000 short
/// unknown keys takes about 35× its length in a debug build.
pub const BODY_EXPANSION: usize = 48;

/// The most of a body actix-http reads ahead into its own buffers before the handler reads
/// any of it: its read buffer stops growing at 128 KiB and the payload's at 32 KiB.
pub const FRAMEWORK_READ_AHEAD: usize = 160 * 1024;

/// Bodies over this many bytes close their connection once answered.
pub const CLOSE_AFTER_BODY: usize = 64 * 1024;

/// Shares of at least this many bytes (bodies over ~85 KiB) hand their memory back to the
/// OS when they start and when they end (see [`BodyMemory`]).
const RETURN_MEMORY_FROM: usize = 4 * 1024 * 1024;

/// How request bodies are read: each within a deadline, all of them together within a
/// memory budget (see the module documentation).
#[derive(Debug, Clone)]
pub struct BodyReader {
    /// The longest a body may take to arrive, from the moment the server starts reading it
    /// (its share held); also the longest a reader waits for its share.
    pub timeout: Duration,
    processing: Arc<Semaphore>,
    processing_budget: usize,
    waiting: Arc<Semaphore>,
    waiting_budget: usize,
}

impl BodyReader {
    /// A reader with a body deadline of `timeout` and `memory` bytes for all bodies: three
    /// quarters for bodies being processed, a quarter for readers waiting their turn.
    pub fn new(timeout: Duration, memory: usize) -> Self {
        let memory = memory.clamp(4, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        let waiting_budget = memory / 4;
        let processing_budget = memory - waiting_budget;
        BodyReader {
            timeout,
            processing: Arc::new(Semaphore::new(processing_budget)),
            processing_budget,
            waiting: Arc::new(Semaphore::new(waiting_budget)),
            waiting_budget,
        }
    }

    /// The share of the processing budget a body of `declared` bytes (unknown: the limit)
    /// takes; never more than the whole of it, so the largest allowed body can always run.
    fn processing_share(&self, declared: Option<u64>) -> u32 {
        let length = declared.map_or(BODY_LIMIT, |len| len as usize).max(1);
        length.saturating_mul(BODY_EXPANSION).min(self.processing_budget) as u32
    }

    /// The share of the waiting budget a reader of `declared` bytes takes while it waits:
    /// what actix-http holds of it, its buffers at twice the bytes (they grow by doubling)
    /// plus their first 8 KiB.
    fn waiting_share(&self, declared: Option<u64>) -> u32 {
        let length = declared.map_or(BODY_LIMIT, |len| len as usize);
        (length.min(FRAMEWORK_READ_AHEAD) * 2 + 8 * 1024).min(self.waiting_budget) as u32
    }
}

/// A body's share of the processing budget, held until its answer is ready.
///
/// Giving the share back must also give the memory back. mimalloc keeps each thread's
/// freed pages for a moment (its purge delay) and purges them only when that thread
/// allocates again; the next large body may well be processed by another worker, so
/// without this its tree would be built on top of the pages this one left committed, and
/// two workers alternating would hold twice the budget (measured: a flood of 1 MiB bodies
/// peaked 10 MiB higher). So a large share makes this thread's heap return its free pages
/// (`mi_collect`) when it starts and again before it releases its permits.
pub struct BodyMemory {
    permit: OwnedSemaphorePermit,
}

impl BodyMemory {
    fn hold(permit: OwnedSemaphorePermit) -> Self {
        let memory = BodyMemory { permit };
        memory.return_free_pages();
        memory
    }

    fn return_free_pages(&self) {
        if self.permit.num_permits() >= RETURN_MEMORY_FROM {
            // SAFETY: `mi_collect` takes no pointers and may be called from any thread at
            // any time; without mimalloc as the global allocator (a test binary) it only
            // visits mimalloc's own, empty heap.
            unsafe { libmimalloc_sys::mi_collect(true) };
        }
    }
}

impl Drop for BodyMemory {
    fn drop(&mut self) {
        self.return_free_pages();
        // `permit` is dropped after this: the budget is released once the pages are back.
    }
}

/// Whether `req`'s connection closes once answered: it sent a body over
/// [`CLOSE_AFTER_BODY`].
pub fn closes_connection(req: &HttpRequest) -> bool {
    declared_length(req).is_some_and(|len| len > CLOSE_AFTER_BODY as u64)
}

fn declared_length(req: &HttpRequest) -> Option<u64> {
    req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok())
}

/// Reads the body up to [`BODY_LIMIT`]: 413 above it, 415 when a non-empty body is not
/// declared as JSON (`application/json` or a `+json` type) or is encoded; 408 when it does
/// not arrive within the [`BodyReader`]'s timeout once its share is held; 503 when the
/// waiting budget is full, or the processing share stays taken for that timeout. Returns the body and its share.
pub async fn read(req: &HttpRequest, mut payload: Payload) -> Result<(Bytes, BodyMemory), ApiError> {
    let reader = req
        .app_data::<Data<BodyReader>>()
        .ok_or_else(|| ApiError::Internal("the body reader is not registered".to_owned()))?;
    let declared_length = declared_length(req);
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
    // Waiting for a share and reading the body each have the body timeout: a reader kept
    // waiting by others is answered 503 (their fault), a body that is slow to arrive once
    // the server reads it 408 (the client's).
    let waited_until = Instant::now() + reader.timeout;
    let waiting = Arc::clone(&reader.waiting)
        .try_acquire_many_owned(reader.waiting_share(declared_length))
        .map_err(|_| ApiError::Overloaded(1))?;
    let memory = timeout_at(
        waited_until,
        Arc::clone(&reader.processing).acquire_many_owned(reader.processing_share(declared_length)),
    )
    .await
    .map_err(|_| ApiError::Overloaded(1))?
    .map_err(|e| ApiError::Internal(format!("the body memory budget is closed: {e}")))?;
    drop(waiting);
    let memory = BodyMemory::hold(memory);
    let deadline = Instant::now() + reader.timeout;
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
