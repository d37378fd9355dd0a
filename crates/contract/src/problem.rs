//! The RFC 9457 problem body (`Problem` of the document) and the catalogue of its codes.
//!
//! Every 4xx and 5xx the service sends is a [`Problem`] with a stable snake_case `code`, a
//! [`ProblemCode`] generated from the document's `components.x-problem-codes`; its `type`
//! is `/problems/{code}`, a page on this server built from the same catalogue. A code is a
//! name the compiler checks, so nothing on the error path can fail to find one.
//!
//! A problem body never grows with the request that caused it: [`Problem::with_errors`]
//! lists at most [`MAX_LISTED_ERRORS`] entries (and stops earlier once their text reaches
//! [`MAX_LISTED_BYTES`]), each `pointer` and `message` cut to [`MAX_TEXT`] bytes, and the
//! `detail` states how many there were in all, so no answer to a bad request exceeds
//! 64 KiB.

use crate::types::{Problem, ProblemError, ProblemErrorIn};

/// The problem-code catalogue, generated from the document's `components.x-problem-codes`
/// (see `wpds_codegen::problems`).
mod codes {
    include!(concat!(env!("OUT_DIR"), "/problem_codes.rs"));
}

pub use codes::ProblemCode;

impl Problem {
    /// A problem of type `code` with the given detail.
    ///
    /// `instance` and `traceId` are left empty for the HTTP layer to fill in.
    pub fn of(code: ProblemCode, detail: impl Into<String>) -> Self {
        Problem {
            r#type: format!("/problems/{}", code.as_str()),
            title: code.title().to_owned(),
            status: i64::from(code.status()),
            detail: detail.into(),
            instance: String::new(),
            code: code.as_str().to_owned(),
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
