//! The hand-written handlers: one module per resource (a tag of the document), each
//! implementing its tag's generated trait (`TimeLogApi`, …) for [`Service`].
//!
//! The traits (generated from the document by `build.rs`) fix every handler's name and
//! types, so a handler that is missing, or whose types no longer match the document, does
//! not compile. Handlers stay thin: read the typed, validated input, call one storage
//! function through [`AppState`], map the result.

mod admin;
mod auth;
mod catalog;
mod categories;
mod contacts;
mod documents;
mod exports;
mod imports;
mod receipts;
mod time_log;

use crate::error::ApiError;
use crate::state::AppState;

/// The service behind the operations.
pub struct Service {
    state: AppState,
}

impl Service {
    /// The service over `state`.
    pub fn new(state: AppState) -> Self {
        Service { state }
    }
}

/// The id a path segment names; a segment that cannot name a record is 404.
pub(crate) fn record_id(segment: &str, what: &str) -> Result<i64, ApiError> {
    wpds_storage::ids::parse(segment).ok_or_else(|| ApiError::NotFound(format!("No {what} {segment} here.")))
}
