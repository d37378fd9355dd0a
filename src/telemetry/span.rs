//! A finished span as the request's thread describes it: borrowed data, encoded at once
//! (`super::otlp`) into the thread's buffer, so a span costs no allocation of its own and
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

/// A link to another trace's span (the SQLite writer's batch to the requests it carried):
/// the storage layer's `wpds_storage::writer::TraceLink` itself, so that a
/// batch's links are encoded where the writer left them, without a copy.
pub use wpds_storage::writer::TraceLink as Link;

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
    /// Its name, kind and constant attributes, encoded once for all spans of its kind of
    /// work (`super::otlp::fixed`).
    pub fixed: &'a [u8],
    /// When it started, in nanoseconds since the Unix epoch.
    pub start: u64,
    /// When it ended, in nanoseconds since the Unix epoch.
    pub end: u64,
    /// Its other attributes (those that differ from span to span).
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

/// Writes `address` as text into `text` (as `Display` would, without its machinery nor an
/// allocation: one per server span) and returns it.
pub fn address_text(address: std::net::IpAddr, text: &mut [u8; 45]) -> &str {
    let at = match address {
        std::net::IpAddr::V4(address) => {
            let mut at = 0;
            for (i, octet) in address.octets().into_iter().enumerate() {
                if i > 0 {
                    text[at] = b'.';
                    at += 1;
                }
                if octet >= 100 {
                    text[at] = b'0' + octet / 100;
                    at += 1;
                }
                if octet >= 10 {
                    text[at] = b'0' + octet / 10 % 10;
                    at += 1;
                }
                text[at] = b'0' + octet % 10;
                at += 1;
            }
            at
        }
        std::net::IpAddr::V6(address) => {
            // The longest IPv6 text (an IPv4-mapped address) is 45 bytes: it always fits.
            let mut cursor = std::io::Cursor::new(&mut text[..]);
            let _ = std::io::Write::write_fmt(&mut cursor, format_args!("{address}"));
            usize::try_from(cursor.position()).unwrap_or(0)
        }
    };
    std::str::from_utf8(&text[..at]).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for address in [
            "0.0.0.0",
            "127.0.0.1",
            "10.200.9.255",
            "192.168.100.10",
            "::1",
            "2001:db8::8a2e:370:7334",
            "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
            "::ffff:255.255.255.255",
        ] {
            let parsed: std::net::IpAddr = address.parse().expect("an address");
            assert_eq!(address_text(parsed, &mut [0; 45]), parsed.to_string(), "{address}");
        }
    }
}
