//! The one error type handlers and the request pipeline return.
//!
//! Each variant is a kind of failure the contract documents; [`crate::http::problem`] maps
//! it to its status and problem+json body, in one place. [`ApiError::Internal`] carries
//! detail for the log only.

use serde_json::Value;
use wpds_contract::problem::ProblemCode;
use wpds_contract::types::{BulkEditConflict, ProblemError};
use wpds_contract::validation::Violations;
use wpds_storage::engine::ThrottledLog;

/// A failed request, as the contract names it.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// 400 `validation_failed`: the request breaks the document's schemas.
    Validation(Violations),
    /// 401 `unauthenticated`; `token_sent` adds `error="invalid_token"` to the challenge.
    Unauthenticated {
        /// What is wrong with the credentials.
        detail: String,
        /// Whether a bearer token was presented.
        token_sent: bool,
    },
    /// 401 `invalid_grant`: an unusable refresh token.
    InvalidGrant,
    /// 403 `forbidden`.
    Forbidden(String),
    /// 404 `not_found`.
    NotFound(String),
    /// 405 `method_not_allowed`, with the methods the path has.
    MethodNotAllowed(Vec<&'static str>),
    /// 406 `not_acceptable`.
    NotAcceptable,
    /// 408 `request_timeout`: the body did not arrive within the given time; the
    /// connection is closed after the answer.
    RequestTimeout(std::time::Duration),
    /// 413 `payload_too_large`, with the limit in bytes.
    PayloadTooLarge(usize),
    /// 415 `unsupported_media_type`.
    UnsupportedMediaType,
    /// A 409 state conflict or `version_conflict`.
    Conflict(Box<Conflict>),
    /// A 422: `unprocessable` (or another catalogued 422 code) naming the fields.
    Unprocessable {
        /// The problem code (`unprocessable`, `idempotency_key_reused`).
        code: ProblemCode,
        /// What is wrong, for people.
        detail: String,
        /// The field(s) and the rule's code.
        errors: Vec<ProblemError>,
    },
    /// 429 `rate_limited`, retry after the given seconds.
    RateLimited(u32),
    /// 503 `unavailable`, retry after the given seconds.
    Unavailable(u32),
    /// 503 `unavailable` from `/readyz` while the server drains for a shutdown.
    Draining,
    /// 503 `unavailable` because the memory for request bodies is taken by other requests
    /// (the waiting part full, or the processing share not free within the body timeout);
    /// retry after the given seconds. The connection closes: the body was not read.
    Overloaded(u32),
    /// 500 `internal`; the text is logged, never sent.
    Internal(String),
}

/// The body of a 409.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The problem code (`version_conflict`, `already_retired`, …).
    pub code: ProblemCode,
    /// What conflicts, for people.
    pub detail: String,
    /// The record's current version, on `version_conflict`.
    pub current_version: Option<i64>,
    /// The settings' current revision, on `version_conflict` of category settings.
    pub current_revision: Option<i64>,
    /// The resource as a 2xx would show it; `Some(Value::Null)` where none exists yet.
    pub current: Option<Value>,
    /// Every stale bulk-edit assertion.
    pub conflicts: Option<Vec<BulkEditConflict>>,
    /// Rule violations to list, for state conflicts that name fields.
    pub errors: Option<Vec<ProblemError>>,
}

impl ApiError {
    /// The problem code this error answers with.
    pub fn code(&self) -> ProblemCode {
        match self {
            ApiError::Validation(_) => ProblemCode::ValidationFailed,
            ApiError::Unauthenticated { .. } => ProblemCode::Unauthenticated,
            ApiError::InvalidGrant => ProblemCode::InvalidGrant,
            ApiError::Forbidden(_) => ProblemCode::Forbidden,
            ApiError::NotFound(_) => ProblemCode::NotFound,
            ApiError::MethodNotAllowed(_) => ProblemCode::MethodNotAllowed,
            ApiError::NotAcceptable => ProblemCode::NotAcceptable,
            ApiError::RequestTimeout(_) => ProblemCode::RequestTimeout,
            ApiError::PayloadTooLarge(_) => ProblemCode::PayloadTooLarge,
            ApiError::UnsupportedMediaType => ProblemCode::UnsupportedMediaType,
            ApiError::Conflict(conflict) => conflict.code,
            ApiError::Unprocessable { code, .. } => *code,
            ApiError::RateLimited(_) => ProblemCode::RateLimited,
            ApiError::Unavailable(_) | ApiError::Overloaded(_) | ApiError::Draining => {
                ProblemCode::Unavailable
            }
            ApiError::Internal(_) => ProblemCode::Internal,
        }
    }
}

impl From<wpds_storage::StoreError> for ApiError {
    fn from(error: wpds_storage::StoreError) -> Self {
        use wpds_contract::types::{ProblemError, ProblemErrorIn};
        use wpds_storage::StoreError;
        use wpds_storage::error::StateConflict;
        let to_errors = |violations: Vec<wpds_storage::error::RuleViolation>| -> Vec<ProblemError> {
            violations
                .into_iter()
                .map(|v| ProblemError::new(ProblemErrorIn::Body, v.pointer, v.code, v.message))
                .collect()
        };
        match error {
            StoreError::NotFound(what) => ApiError::NotFound(format!("No {what} here.")),
            StoreError::Rule(violations) => {
                let shown = violations.iter().take(wpds_contract::problem::MAX_LISTED_ERRORS);
                let detail = shown.map(|v| v.message.as_str()).collect::<Vec<_>>().join("; ");
                ApiError::Unprocessable {
                    code: ProblemCode::Unprocessable,
                    detail,
                    errors: to_errors(violations),
                }
            }
            StoreError::IdempotencyKeyReused(key) => ApiError::Unprocessable {
                code: ProblemCode::IdempotencyKeyReused,
                detail: format!("requestId {key} was used for another request."),
                errors: vec![ProblemError::new(
                    ProblemErrorIn::Body,
                    "/requestId",
                    "idempotency_key_reused",
                    "already used with a different body",
                )],
            },
            StoreError::State(state) => {
                let StateConflict { refusal, detail, current, violations } = *state;
                let errors = (!violations.is_empty()).then(|| to_errors(violations));
                ApiError::Conflict(Box::new(Conflict {
                    code: problem_of(refusal),
                    detail,
                    current,
                    errors,
                    current_version: None,
                    current_revision: None,
                    conflicts: None,
                }))
            }
            StoreError::VersionConflict(stale) => ApiError::Conflict(Box::new(Conflict {
                code: ProblemCode::VersionConflict,
                detail: stale.detail,
                current_version: stale.current_version,
                current_revision: stale.current_revision,
                current: stale.current,
                conflicts: stale.conflicts,
                errors: None,
            })),
            StoreError::Unavailable(why) => {
                // Every request meets an outage: one line per 5 s, counting the others.
                static UNAVAILABLE: ThrottledLog = ThrottledLog::new(log::Level::Warn);
                UNAVAILABLE.log("database unavailable", &why);
                ApiError::Unavailable(1)
            }
            StoreError::Internal(why) => ApiError::Internal(why),
        }
    }
}

/// The problem code of a refused change.
fn problem_of(refusal: wpds_storage::error::Refusal) -> ProblemCode {
    use wpds_storage::error::Refusal;
    match refusal {
        Refusal::AlreadyRetired => ProblemCode::AlreadyRetired,
        Refusal::LinkExists => ProblemCode::LinkExists,
        Refusal::CodeTaken => ProblemCode::CodeTaken,
        Refusal::ImportKindMismatch => ProblemCode::ImportKindMismatch,
        Refusal::ImportNotEditable => ProblemCode::ImportNotEditable,
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::problem_of;
    use wpds_storage::error::Refusal;

    #[test]
    fn the_audit_log_names_a_refusal_as_its_problem_code_does() {
        for refusal in Refusal::ALL {
            assert_eq!(refusal.as_str(), problem_of(refusal).as_str(), "{refusal:?}");
        }
    }
}
