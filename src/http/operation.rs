//! What the request pipeline knows of an operation and hands to its handler: the
//! generated table's row ([`Operation`]), the request's context ([`RequestContext`]) and a
//! handler's successful answer ([`Answer`], built by the generated [`Respond`] impls). They
//! live here, below the generated
//! `crate::operations`, so the pipeline ([`crate::http::dispatch`], [`crate::http::auth`])
//! never depends on the module that depends on it.

use crate::error::ApiError;

/// One operation of the contract, as the generated table lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// Its place in the table (`OPERATIONS[index]` is this operation).
    pub index: usize,
    /// The stable camelCase `operationId`.
    pub id: &'static str,
    /// Upper-case HTTP method.
    pub method: &'static str,
    /// Path template with `{name}` parameters.
    pub path: &'static str,
    /// The name of a request's server span, `{method} {path}` (the HTTP semantic
    /// conventions' `{method} {http.route}`), made once here rather than per request.
    pub span_name: &'static str,
    /// The operation's summary.
    pub summary: &'static str,
    /// The status of its first (lowest) successful answer.
    pub success_status: u16,
    /// Who may call it: the role its own `security` names in the document.
    pub access: Access,
    /// Whether the operation takes a JSON body.
    pub has_body: bool,
    /// Every status the document declares for it, ascending.
    pub statuses: &'static [u16],
}

/// Who may call an operation, as its own `security` in the document declares it
/// (`bearerAuth: [workspace-member]`, `[platform-admin]`, or `security: []`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: no token is read (`security: []`).
    Public,
    /// A member of the workspace named by the `workspaceId` path parameter.
    WorkspaceMember,
    /// A platform administrator.
    PlatformAdmin,
}

impl Operation {
    /// Whether a bearer access token is required.
    pub fn secured(&self) -> bool {
        self.access != Access::Public
    }
}

/// What a handler knows about the request beyond its typed input.
#[derive(Debug)]
pub struct RequestContext {
    /// The request's trace id (`X-Request-Id`).
    pub request_id: String,
    /// The authenticated caller; present for every operation the document secures.
    pub caller: Option<wpds_storage::repos::auth::Caller>,
    /// What is left of the request's time for the database, for the handler's
    /// [`crate::state::AppState::read`] and [`crate::state::AppState::write`].
    pub budget: wpds_storage::Budget,
    /// The id the path's `workspaceId` names, parsed once for the whole request (the
    /// membership check reads it too); `None` when there is none or it names no record.
    pub workspace_id: Option<i64>,
}

impl RequestContext {
    /// The caller of a secured operation.
    pub fn caller(&self) -> Result<&wpds_storage::repos::auth::Caller, ApiError> {
        self.caller
            .as_ref()
            .ok_or_else(|| ApiError::Internal("a secured operation ran without a caller".to_owned()))
    }

    /// The workspace the path names; 404 naming `segment` (the path's `workspaceId` as
    /// sent) when it cannot name one.
    pub fn workspace_id(&self, segment: &str) -> Result<i64, ApiError> {
        self.workspace_id.ok_or_else(|| ApiError::NotFound(format!("No workspace {segment} here.")))
    }
}

/// A handler's successful answer as the pipeline sends it: the status, the JSON body (none
/// for a `204`, a `304` or a redirect) and the headers the handler sets. Built only by the
/// generated [`Respond`] impls, from the operation's `…Response` enum, so the status and
/// the headers are always ones the document declares for that operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The serialised JSON body, if the response has one.
    pub body: Option<Vec<u8>>,
    /// Headers to set: lower-case names as the document declares them, values as text.
    pub headers: Vec<(&'static str, String)>,
}

impl Answer {
    /// An answer with `body` as JSON.
    pub fn json<T: serde::Serialize>(status: u16, body: &T) -> Result<Self, ApiError> {
        let body = serde_json::to_vec(body)
            .map_err(|e| ApiError::Internal(format!("cannot serialise a {status} answer: {e}")))?;
        Ok(Answer { status, body: Some(body), headers: Vec::new() })
    }

    /// An answer without a body.
    pub fn empty(status: u16) -> Self {
        Answer { status, body: None, headers: Vec::new() }
    }

    /// Adds the header `name` (lower-case).
    pub fn header(&mut self, name: &'static str, value: String) {
        self.headers.push((name, value));
    }
}

/// What an operation's generated `…Response` enum implements: turning the handler's typed
/// answer into the status, body and headers sent.
pub trait Respond {
    /// The answer to send.
    fn into_answer(self) -> Result<Answer, ApiError>;
}
