//! The RFC 9457 problem body (`Problem` of the document) and the catalogue of its codes.
//!
//! Every 4xx and 5xx the service sends is a [`Problem`] with a stable snake_case `code`
//! from [`CODES`]; its `type` is `/problems/{code}`, a page on this server built from the
//! same catalogue.
//!
//! A problem body never grows with the request that caused it: [`Problem::with_errors`]
//! lists at most [`MAX_LISTED_ERRORS`] entries (and stops earlier once their text reaches
//! [`MAX_LISTED_BYTES`]), each `pointer` and `message` cut to [`MAX_TEXT`] bytes, and the
//! `detail` states how many there were in all, so no answer to a bad request exceeds
//! 64 KiB.

use crate::types::{Problem, ProblemError, ProblemErrorIn};

/// One problem type: its stable code, HTTP status, title and a short explanation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProblemType {
    /// Stable snake_case code (`Problem.code`).
    pub code: &'static str,
    /// HTTP status answered with it.
    pub status: u16,
    /// Short summary (`Problem.title`).
    pub title: &'static str,
    /// What it means and what a client can do about it (the `/problems/{code}` page).
    pub description: &'static str,
}

/// Every problem type the service answers with.
pub const CODES: &[ProblemType] = &[
    ProblemType {
        code: "validation_failed",
        status: 400,
        title: "Validation failed",
        description: "The request breaks the published schema: a path, query or body value is missing, malformed or out of bounds, or the body is not valid JSON. errors[] lists every violation with the failing schema keyword.",
    },
    ProblemType {
        code: "unauthenticated",
        status: 401,
        title: "Unauthenticated",
        description: "No bearer token was sent, or it is malformed, unknown, expired or revoked. Obtain a new access token with POST /v1/auth/refresh.",
    },
    ProblemType {
        code: "invalid_grant",
        status: 401,
        title: "Invalid grant",
        description: "The refresh token is unknown, expired, revoked or already spent. A spent refresh token presented again revokes every token of its login.",
    },
    ProblemType {
        code: "forbidden",
        status: 403,
        title: "Forbidden",
        description: "The caller is not a member of the workspace, or not a platform administrator on /admin/api.",
    },
    ProblemType {
        code: "not_found",
        status: 404,
        title: "Not found",
        description: "The route, or a record named in the path, does not exist in this workspace.",
    },
    ProblemType {
        code: "method_not_allowed",
        status: 405,
        title: "Method not allowed",
        description: "The path exists but not with this method; the Allow header lists the methods it has.",
    },
    ProblemType {
        code: "not_acceptable",
        status: 406,
        title: "Not acceptable",
        description: "The Accept header excludes application/json, the only representation this API answers with.",
    },
    ProblemType {
        code: "request_timeout",
        status: 408,
        title: "Request timeout",
        description: "The request body did not arrive within the server's body timeout (10 s by default); the connection is closed. Send the body again, at once.",
    },
    ProblemType {
        code: "payload_too_large",
        status: 413,
        title: "Payload too large",
        description: "The request body is larger than 1 MiB.",
    },
    ProblemType {
        code: "unsupported_media_type",
        status: 415,
        title: "Unsupported media type",
        description: "The request body must be sent as Content-Type: application/json, without a Content-Encoding (or with identity).",
    },
    ProblemType {
        code: "version_conflict",
        status: 409,
        title: "Version conflict",
        description: "expectedVersion or expectedRevision is not the current one. currentVersion (or currentRevision) and current show the record as it is now; nothing changed. Re-read and retry.",
    },
    ProblemType {
        code: "already_retired",
        status: 409,
        title: "Already retired",
        description: "The global company was retired before; current holds it.",
    },
    ProblemType {
        code: "import_kind_mismatch",
        status: 409,
        title: "Import kind mismatch",
        description: "The operation applies to assistant imports of another kind.",
    },
    ProblemType {
        code: "import_not_editable",
        status: 409,
        title: "Import not editable",
        description: "The import's status does not allow this change; only an import in review can be edited.",
    },
    ProblemType {
        code: "code_taken",
        status: 409,
        title: "Code taken",
        description: "The code is already used by another product type or category of the workspace.",
    },
    ProblemType {
        code: "link_exists",
        status: 409,
        title: "Link exists",
        description: "A link between the same two companies that is not terminated exists.",
    },
    ProblemType {
        code: "idempotency_key_reused",
        status: 422,
        title: "Idempotency key reused",
        description: "The requestId was already used in this workspace with a different body.",
    },
    ProblemType {
        code: "unprocessable",
        status: 422,
        title: "Unprocessable request",
        description: "The request matches the schema but breaks a rule of the operation; errors[] names the field(s) and the rule's code as keyword.",
    },
    ProblemType {
        code: "rate_limited",
        status: 429,
        title: "Rate limited",
        description: "Too many requests for this token; wait for Retry-After seconds.",
    },
    ProblemType {
        code: "internal",
        status: 500,
        title: "Internal error",
        description: "An unexpected error. Nothing about it is shown; quote the traceId when reporting it.",
    },
    ProblemType {
        code: "unavailable",
        status: 503,
        title: "Service unavailable",
        description: "The server cannot answer in time: the database could not be reached, or the memory reserved for request bodies is taken. Retry after Retry-After seconds.",
    },
];

/// The catalogue entry for `code`, if it is one.
pub fn problem_type(code: &str) -> Option<&'static ProblemType> {
    CODES.iter().find(|t| t.code == code)
}

impl Problem {
    /// A problem of catalogue type `code` with the given detail.
    ///
    /// `instance` and `traceId` are left empty for the HTTP layer to fill in.
    /// Panics when `code` is not in [`CODES`]: codes are stable and catalogued.
    pub fn of(code: &str, detail: impl Into<String>) -> Self {
        let kind = problem_type(code).unwrap_or_else(|| panic!("uncatalogued problem code {code}"));
        Problem {
            r#type: format!("/problems/{}", kind.code),
            title: kind.title.to_owned(),
            status: i64::from(kind.status),
            detail: detail.into(),
            instance: String::new(),
            code: kind.code.to_owned(),
            trace_id: String::new(),
            errors: None,
            current_version: None,
            current_revision: None,
            current: None,
            conflicts: None,
        }
        .bounded()
    }

    /// The same problem listing `errors`, bounded: the first [`listed`] of them, each
    /// `pointer`, `message` and `keyword` cut to [`MAX_TEXT`] bytes. The caller's `detail`
    /// says how many there were in all when some are left out ([`count_phrase`]).
    pub fn with_errors(mut self, mut errors: Vec<ProblemError>) -> Self {
        errors.truncate(listed(&errors));
        for error in &mut errors {
            cut(&mut error.pointer, MAX_TEXT);
            cut(&mut error.message, MAX_TEXT);
            cut(&mut error.keyword, MAX_TEXT);
        }
        self.errors = Some(errors);
        self
    }

    /// The same problem with `detail` cut to [`MAX_TEXT`] bytes.
    fn bounded(mut self) -> Self {
        cut(&mut self.detail, MAX_TEXT);
        self
    }
}

/// How many of `errors` a problem lists: at most [`MAX_LISTED_ERRORS`], and no more than
/// fit in [`MAX_LISTED_BYTES`] of text once each is cut to [`MAX_TEXT`] (the first always).
pub fn listed(errors: &[ProblemError]) -> usize {
    let mut bytes = 0;
    for (i, error) in errors.iter().take(MAX_LISTED_ERRORS).enumerate() {
        bytes += [&error.pointer, &error.message, &error.keyword]
            .iter()
            .map(|t| t.len().min(MAX_TEXT))
            .sum::<usize>();
        if i > 0 && bytes > MAX_LISTED_BYTES {
            return i;
        }
    }
    errors.len().min(MAX_LISTED_ERRORS)
}

/// "1 error", "3 errors", or "85004 errors; the first 100 are listed" when only `listed`
/// of `total` are.
pub fn count_phrase(total: usize, listed: usize) -> String {
    match (total, listed) {
        (1, 1) => "1 error".to_owned(),
        (n, k) if k < n => format!("{n} errors; the first {k} are listed"),
        (n, _) => format!("{n} errors"),
    }
}

/// The most `errors[]` entries one problem lists.
pub const MAX_LISTED_ERRORS: usize = 100;
/// The most bytes of `pointer`, `message` and `keyword` text the listed entries hold
/// together (a listed entry is never cut for it; the list ends before the entry that would
/// pass it).
pub const MAX_LISTED_BYTES: usize = 48 * 1024;
/// The longest `pointer`, `message`, `keyword` or `detail`, in bytes; longer text is cut,
/// ending with "…".
pub const MAX_TEXT: usize = 1024;

/// Cuts `text` to at most `max` bytes on a character boundary, ending with "…" when cut.
pub fn cut(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let ellipsis = "…";
    let keep = max.saturating_sub(ellipsis.len());
    let at = (0..=keep).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    text.truncate(at);
    text.push_str(ellipsis);
}

impl ProblemError {
    /// One violation at `pointer` (a JSON pointer in the body, or a parameter name).
    pub fn new(
        location: ProblemErrorIn,
        pointer: impl Into<String>,
        keyword: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ProblemError {
            r#in: location,
            pointer: pointer.into(),
            message: message.into(),
            keyword: keyword.into(),
        }
    }
}
