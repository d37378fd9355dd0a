//! A finished span as the request's thread describes it: borrowed data, encoded at once
//! ([`super::otlp`]) into the thread's buffer, so a span costs no allocation of its own and
//! only its encoded bytes travel to the exporter's thread.

use super::context::SpanContext;
use std::time::SystemTime;

/// What a span is to its trace (OTLP's `SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Work inside the service (authentication, validation, a database call).
    Internal = 1,
    /// The handling of one incoming request.
    Server = 2,
}

/// An attribute's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// Text.
    Str(&'a str),
    /// An integer.
    Int(i64),
    /// A flag.
    Bool(bool),
    /// An address, written as text.
    Ip(std::net::IpAddr),
}

/// One attribute of a span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attribute<'a> {
    /// Its name, per the semantic conventions.
    pub key: &'static str,
    /// Its value.
    pub value: Value<'a>,
}

impl<'a> Attribute<'a> {
    /// `key` = `value`.
    pub const fn new(key: &'static str, value: Value<'a>) -> Self {
        Attribute { key, value }
    }
}

/// A link to another trace's span (the SQLite writer's batch to the requests it carried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The linked span's trace.
    pub trace_id: [u8; 16],
    /// The linked span.
    pub span_id: [u8; 8],
}

/// A finished, sampled span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanRecord<'a> {
    /// The span's trace and id.
    pub context: SpanContext,
    /// The parent's span id (`None` for a trace's root), and whether the parent is remote
    /// (the caller's, from `traceparent`).
    pub parent: Option<([u8; 8], bool)>,
    /// The caller's `tracestate`, carried by the server span.
    pub trace_state: Option<&'a str>,
    /// `{method} {route}` for a server span, what the work is otherwise.
    pub name: &'a str,
    /// Server or internal.
    pub kind: Kind,
    /// When it started, in nanoseconds since the Unix epoch.
    pub start: u64,
    /// When it ended, in nanoseconds since the Unix epoch.
    pub end: u64,
    /// Its attributes.
    pub attributes: &'a [Attribute<'a>],
    /// Its links.
    pub links: &'a [Link],
    /// The message of an error status (a 5xx answer); `None` leaves the status unset.
    pub error: Option<&'a str>,
}

/// `at` in nanoseconds since the Unix epoch (0 for a clock set before it).
pub fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Now, in nanoseconds since the Unix epoch.
pub fn now() -> u64 {
    unix_nanos(SystemTime::now())
}

#[cfg(test)]
impl<'a> SpanRecord<'a> {
    /// A bare internal span `name` of a fixed trace, for the encoding tests.
    pub fn internal(name: &'a str) -> Self {
        SpanRecord {
            context: SpanContext { trace_id: [1; 16], span_id: [2; 8], sampled: true },
            parent: None,
            trace_state: None,
            name,
            kind: Kind::Internal,
            start: 1,
            end: 2,
            attributes: &[],
            links: &[],
            error: None,
        }
    }
}
