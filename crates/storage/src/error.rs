//! The storage layer's one error type: the domain outcomes the operations document, plus
//! "the database is unreachable" and "something unexpected" (logged, never shown).

use serde_json::Value;
use wpds_contract::types::BulkEditConflict;

/// One broken rule of an operation (answered as 422 `unprocessable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleViolation {
    /// The rule's code (`unknown_project`, `self_link`, …).
    pub code: &'static str,
    /// JSON pointer of the offending body field.
    pub pointer: String,
    /// What is wrong, for people.
    pub message: String,
}

impl RuleViolation {
    /// A violation of rule `code` at `pointer`.
    pub fn new(code: &'static str, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        RuleViolation { code, pointer: pointer.into(), message: message.into() }
    }
}

/// Why a storage operation did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// A record named in the path does not exist (in this workspace).
    NotFound(String),
    /// One or more rules of the operation are broken; nothing changed.
    Rule(Vec<RuleViolation>),
    /// The same idempotency key was used with another body.
    IdempotencyKeyReused(String),
    /// The record's state refuses the change (it is retired already, a code is taken, …);
    /// not a stale version.
    State(Box<StateConflict>),
    /// The expected version (or revision) is not the current one; nothing changed.
    VersionConflict(Box<VersionConflict>),
    /// The database could not be reached in time.
    Unavailable(String),
    /// Anything else; the text is for the log.
    Internal(String),
}

/// What in a record's state refuses a change. The server maps each to its problem code
/// (`src/error.rs`): storage says what happened, not how the contract names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The global company was retired before.
    AlreadyRetired,
    /// A live link between the two companies exists.
    LinkExists,
    /// Another category or product type holds the code.
    CodeTaken,
    /// The assistant import is not of the kind the change is for.
    ImportKindMismatch,
    /// The assistant import is past review and can no longer be edited.
    ImportNotEditable,
}

impl Refusal {
    /// Every refusal.
    pub const ALL: [Refusal; 5] = [
        Refusal::AlreadyRetired,
        Refusal::LinkExists,
        Refusal::CodeTaken,
        Refusal::ImportKindMismatch,
        Refusal::ImportNotEditable,
    ];

    /// Its name, as the audit log stores a refused administrative call's outcome
    /// (`detail.refused`); the same words the contract's problem codes use.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::AlreadyRetired => "already_retired",
            Refusal::LinkExists => "link_exists",
            Refusal::CodeTaken => "code_taken",
            Refusal::ImportKindMismatch => "import_kind_mismatch",
            Refusal::ImportNotEditable => "import_not_editable",
        }
    }
}

/// A state conflict other than a stale version.
#[derive(Debug, Clone, PartialEq)]
pub struct StateConflict {
    /// What refuses the change.
    pub refusal: Refusal,
    /// What conflicts, for people.
    pub detail: String,
    /// The resource as it is now, where the contract shows it.
    pub current: Option<Value>,
    /// The offending fields, where the conflict names some.
    pub violations: Vec<RuleViolation>,
}

/// A stale expected version (or revision).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VersionConflict {
    /// What conflicts, for people.
    pub detail: String,
    /// The current version, for versioned records.
    pub current_version: Option<i64>,
    /// The current revision, for category settings.
    pub current_revision: Option<i64>,
    /// The resource as a 200 shows it, or `Value::Null` where none exists yet.
    pub current: Option<Value>,
    /// Every stale bulk-edit assertion.
    pub conflicts: Option<Vec<BulkEditConflict>>,
}

impl StoreError {
    /// A single rule violation.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn rule(code: &'static str, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        StoreError::Rule(vec![RuleViolation::new(code, pointer, message)])
    }

    /// Whether the statement gave up waiting for a row lock (PostgreSQL's `lock_timeout`):
    /// the connection is fine, the row was busy.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn is_lock_wait(&self) -> bool {
        matches!(self, StoreError::Unavailable(why) if why.contains("canceling statement due to lock timeout"))
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NotFound(what) => write!(f, "not found: {what}"),
            StoreError::Rule(violations) => write!(f, "{} rule violation(s)", violations.len()),
            StoreError::IdempotencyKeyReused(key) => write!(f, "idempotency key {key} reused"),
            StoreError::State(conflict) => write!(f, "{}: {}", conflict.refusal.as_str(), conflict.detail),
            StoreError::VersionConflict(conflict) => write!(f, "version conflict: {}", conflict.detail),
            StoreError::Unavailable(why) => write!(f, "database unavailable: {why}"),
            StoreError::Internal(why) => write!(f, "storage failure: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<diesel::result::Error> for StoreError {
    fn from(error: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error};
        match &error {
            Error::DatabaseError(
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
                info,
            ) => StoreError::Unavailable(info.message().to_owned()),
            Error::DatabaseError(_, info) if is_busy(info.message()) || is_storage_fault(info.message()) => {
                StoreError::Unavailable(info.message().to_owned())
            }
            Error::DatabaseError(_, info) if is_stale_statement(info.message()) => {
                StoreError::Unavailable(format!(
                    "{} (a migration changed what a prepared statement returns: the connection is replaced; \
                 behind a pooler that keeps prepared statements, RECONNECT on PgBouncer's console)",
                    info.message()
                ))
            }
            _ => StoreError::Internal(error.to_string()),
        }
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(error: r2d2::Error) -> Self {
        StoreError::Unavailable(error.to_string())
    }
}

/// The database did not let the statement proceed: SQLite's "database is locked" after
/// `busy_timeout`; PostgreSQL's `lock_timeout` / `statement_timeout` cancellations, one
/// cancelled by an operator (`pg_cancel_backend`, a pooler's cancel) or for a standby's
/// recovery, a deadlock or serialization failure (retrying is the remedy), a closed
/// connection (PgBouncer's "server conn crashed?" when the server's backend ended), or a
/// server that takes no writes (SQLSTATE 25006 "cannot execute … in a read-only
/// transaction", and what a standby says of work it cannot do "during recovery"): after a
/// failover, a connection to the node that is now a standby. The caller discards the
/// connection that met it, so the next one goes where writes are taken.
/// Behind PgBouncer, what it answers for a server it cannot reach or log in to: "server login
/// has been failing, cached error: …" (for `server_login_retry` after a failed login, such as
/// PostgreSQL's "the database system is shutting down" while a primary stops for a
/// failover), "server connection closed" (the server connection lent to this client ended
/// under it: a primary stopping), "pgbouncer cannot connect to server", "query_wait_timeout", "no more
/// connections allowed"; and PostgreSQL's own SQLSTATE 57P03 texts ("the database system is
/// shutting down", "… is starting up", "… is not yet accepting connections"). Each is the
/// database away for a while, never the request's fault.
fn is_busy(message: &str) -> bool {
    message.contains("database is locked")
        || message.contains("database is busy")
        || message.contains("canceling statement due to lock timeout")
        || message.contains("canceling statement due to statement timeout")
        || message.contains("canceling statement due to user request")
        || message.contains("canceling statement due to conflict with recovery")
        || message.contains("server conn crashed")
        || message.contains("terminating connection")
        || message.contains("deadlock detected")
        || message.contains("could not serialize access")
        || message.contains("server closed the connection")
        || message.contains("in a read-only transaction")
        || message.contains("during recovery")
        || message.contains("server login has been failing")
        || message.contains("server connection closed")
        || message.contains("pgbouncer cannot connect to server")
        || message.contains("query_wait_timeout")
        || message.contains("no more connections allowed")
        || message.contains("the database system is shutting down")
        || message.contains("the database system is starting up")
        || message.contains("the database system is not yet accepting connections")
}

/// PostgreSQL refuses a prepared statement whose result columns a migration changed
/// (SQLSTATE 0A000, "cached plan must not change result type"). The server selects its
/// columns by name, so a migration that adds never causes it; one that changes a selected
/// column's type in place would. The connection is discarded (503, like a busy database):
/// its successor prepares the statement again.
fn is_stale_statement(message: &str) -> bool {
    message.contains("cached plan must not change result type")
}

/// SQLite cannot write its files: SQLITE_READONLY (a read-only file or directory),
/// SQLITE_FULL (a full disk), SQLITE_IOERR (any I/O error) and SQLITE_CANTOPEN, each with
/// its extended codes. diesel passes only `sqlite3_errmsg`, which for these is the primary
/// code's text. Lifting the fault is the remedy, not changing the request: 503, and the
/// writer reopens its connection (see [`crate::engine::Writer`]).
fn is_storage_fault(message: &str) -> bool {
    message.contains("attempt to write a readonly database")
        || message.contains("database or disk is full")
        || message.contains("disk I/O error")
        || message.contains("unable to open database file")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PostgreSQL and PgBouncer answer while a primary stops, starts or is out of reach,
    /// as the soak met them (scripts/cluster --minutes): each is the database away (503).
    #[test]
    fn a_database_away_for_a_failover_or_behind_a_pooler_that_cannot_reach_it_is_unavailable() {
        for message in [
            "server login has been failing, cached error: the database system is shutting down (server_login_retry)",
            "pgbouncer cannot connect to server",
            "query_wait_timeout",
            "no more connections allowed (max_client_conn)",
            "the database system is shutting down",
            "the database system is starting up",
            "the database system is not yet accepting connections",
            "server conn crashed?",
            "server connection closed",
        ] {
            assert!(is_busy(message), "{message}");
        }
        assert!(!is_busy("duplicate key value violates unique constraint \"report_exports_key\""));
    }
}
