//! OTLP's `ExportTraceServiceRequest`, encoded as protobuf: each span when it ends
//! ([`span`], on the request's thread), the message around a batch of them on export
//! ([`request`]).
//!
//! Hand-written because it runs at the span rate: the message has a handful of fields
//! (opentelemetry-proto's `trace.proto`, `common.proto`, `resource.proto`), and encoding
//! them in one pass into one buffer costs a fraction of building the generated message
//! structs (a `String` per attribute key) and encoding those. `scripts/check-tracing`
//! decodes what this writes with the published opentelemetry-proto package.

use super::span::{Attribute, SpanRecord, Value};

/// Protobuf wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// The span flags' "whether the parent is remote is known" bit, and the bit saying it is.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// `Status.code` for an error.
const STATUS_ERROR: u64 = 2;

fn varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

fn tag(buf: &mut Vec<u8>, field: u32, wire: u32) {
    varint(buf, u64::from(field << 3 | wire));
}

fn bytes(buf: &mut Vec<u8>, field: u32, data: &[u8]) {
    tag(buf, field, LEN);
    varint(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

/// A nested message: `body` writes its fields after the tag; its length is put before
/// them once known (one byte reserved, the rest made room for when longer than 127).
fn nested(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    tag(buf, field, LEN);
    let at = buf.len();
    buf.push(0);
    body(buf);
    let length = (buf.len() - at - 1) as u64;
    if length < 0x80 {
        buf[at] = length as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        varint(&mut prefix, length);
        buf.splice(at..=at, prefix);
    }
}

/// `KeyValue { key = 1; value = 2 (AnyValue) }`.
fn attribute(buf: &mut Vec<u8>, field: u32, attribute: &Attribute<'_>) {
    nested(buf, field, |buf| {
        bytes(buf, 1, attribute.key.as_bytes());
        nested(buf, 2, |buf| match attribute.value {
            Value::Str(text) => bytes(buf, 1, text.as_bytes()),
            Value::Bool(flag) => {
                tag(buf, 2, VARINT);
                varint(buf, u64::from(flag));
            }
            Value::Int(number) => {
                tag(buf, 3, VARINT);
                varint(buf, number as u64);
            }
            Value::Ip(std::net::IpAddr::V4(address)) => {
                let mut text = [0u8; 15];
                bytes(buf, 1, ipv4(&mut text, address.octets()));
            }
            Value::Ip(address) => bytes(buf, 1, address.to_string().as_bytes()),
        });
    });
}

/// An IPv4 address in dotted decimal, written into `text` without the formatting
/// machinery (one per server span).
fn ipv4(text: &mut [u8; 15], octets: [u8; 4]) -> &[u8] {
    let mut at = 0;
    for (i, octet) in octets.into_iter().enumerate() {
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
    &text[..at]
}

/// The field of `ScopeSpans` that holds a span.
const SPANS_FIELD: u32 = 2;

/// Appends `span` to `buf` as one `spans` field of `ScopeSpans` (field numbers of
/// `trace.proto`): a run of these is what [`request`] wraps.
pub fn span(buf: &mut Vec<u8>, span: &SpanRecord<'_>) {
    nested(buf, SPANS_FIELD, |buf| {
        bytes(buf, 1, &span.context.trace_id);
        bytes(buf, 2, &span.context.span_id);
        if let Some(state) = span.trace_state {
            bytes(buf, 3, state.as_bytes());
        }
        let mut flags = u32::from(span.context.sampled) | HAS_IS_REMOTE;
        if let Some((parent, remote)) = &span.parent {
            bytes(buf, 4, parent);
            if *remote {
                flags |= IS_REMOTE;
            }
        }
        bytes(buf, 5, span.name.as_bytes());
        tag(buf, 6, VARINT);
        varint(buf, span.kind as u64);
        tag(buf, 7, FIXED64);
        buf.extend_from_slice(&span.start.to_le_bytes());
        tag(buf, 8, FIXED64);
        buf.extend_from_slice(&span.end.to_le_bytes());
        for a in span.attributes {
            attribute(buf, 9, a);
        }
        for link in span.links {
            nested(buf, 13, |buf| {
                bytes(buf, 1, &link.trace_id);
                bytes(buf, 2, &link.span_id);
                tag(buf, 6, FIXED32);
                buf.extend_from_slice(&(1 | HAS_IS_REMOTE).to_le_bytes());
            });
        }
        if let Some(message) = span.error {
            nested(buf, 15, |buf| {
                bytes(buf, 2, message.as_bytes());
                tag(buf, 3, VARINT);
                varint(buf, STATUS_ERROR);
            });
        }
        tag(buf, 16, FIXED32);
        buf.extend_from_slice(&flags.to_le_bytes());
    });
}

/// Where each span [`span`] wrote into `spans` ends: the offsets after each, in order.
/// Stops at anything it did not write (never, unless the buffer was cut).
pub fn span_ends(spans: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if spans.get(at) != Some(&(((SPANS_FIELD << 3) | LEN) as u8)) {
            return None;
        }
        let mut length = 0_u64;
        let mut shift = 0;
        at += 1;
        loop {
            let byte = *spans.get(at)?;
            at += 1;
            length |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        at = at.checked_add(usize::try_from(length).ok()?).filter(|end| *end <= spans.len())?;
        Some(at)
    })
}

/// Who exports: the resource's attributes and the instrumentation scope.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The resource's attributes (`service.name`, …).
    pub resource: Vec<(String, String)>,
    /// The instrumentation scope's name.
    pub scope: &'static str,
    /// The instrumentation scope's version.
    pub version: &'static str,
}

/// How many bytes `value` takes as a varint.
fn varint_len(value: u64) -> usize {
    // Seven bits a byte, and one byte for zero.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Writes one `ExportTraceServiceRequest` into `buf` (cleared first): one `ResourceSpans`
/// of `origin` holding one `ScopeSpans` whose spans are `spans` (as [`span`] wrote them).
/// The lengths are worked out before the spans are copied, so they are copied once.
pub fn request(buf: &mut Vec<u8>, origin: &Origin, spans: &[u8]) {
    let mut resource = Vec::new();
    nested(&mut resource, 1, |buf| {
        for (key, value) in &origin.resource {
            nested(buf, 1, |buf| {
                bytes(buf, 1, key.as_bytes());
                nested(buf, 2, |buf| bytes(buf, 1, value.as_bytes()));
            });
        }
    });
    let mut scope = Vec::new();
    nested(&mut scope, 1, |buf| {
        bytes(buf, 1, origin.scope.as_bytes());
        bytes(buf, 2, origin.version.as_bytes());
    });
    let scope_spans = (scope.len() + spans.len()) as u64;
    let resource_spans = resource.len() as u64 + 1 + varint_len(scope_spans) as u64 + scope_spans;
    buf.clear();
    buf.reserve(resource_spans as usize + 16);
    tag(buf, 1, LEN);
    varint(buf, resource_spans);
    buf.extend_from_slice(&resource);
    tag(buf, 2, LEN);
    varint(buf, scope_spans);
    buf.extend_from_slice(&scope);
    buf.extend_from_slice(spans);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_nested_lengths_are_canonical() {
        let mut buf = Vec::new();
        varint(&mut buf, 300);
        assert_eq!(buf, [0xac, 0x02]);
        let mut buf = Vec::new();
        nested(&mut buf, 1, |buf| buf.extend_from_slice(&[7; 200]));
        assert_eq!(&buf[..3], &[0x0a, 0xc8, 0x01]);
        assert_eq!(buf.len(), 203);
        let mut buf = Vec::new();
        nested(&mut buf, 2, |buf| buf.extend_from_slice(&[7; 5]));
        assert_eq!(buf, [0x12, 5, 7, 7, 7, 7, 7]);
    }

    #[test]
    fn ipv4_addresses_are_written_as_display_writes_them() {
        for address in ["0.0.0.0", "127.0.0.1", "10.200.9.255", "192.168.100.10"] {
            let parsed: std::net::Ipv4Addr = address.parse().expect("an address");
            assert_eq!(ipv4(&mut [0; 15], parsed.octets()), address.as_bytes());
        }
    }

    #[test]
    fn span_ends_finds_every_span_written() {
        let long = "x".repeat(300);
        let mut buf = Vec::new();
        let mut ends = Vec::new();
        for name in ["short", long.as_str(), "again"] {
            span(&mut buf, &SpanRecord::internal(name));
            ends.push(buf.len());
        }
        assert_eq!(span_ends(&buf).collect::<Vec<_>>(), ends);
        assert_eq!(span_ends(&buf[..buf.len() - 1]).count(), 2, "a cut span is not counted");
    }

    #[test]
    fn varint_len_is_what_varint_writes() {
        for value in [0, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut buf = Vec::new();
            varint(&mut buf, value);
            assert_eq!(varint_len(value), buf.len(), "{value}");
        }
    }

    #[test]
    fn the_flags_field_has_a_two_byte_tag() {
        let mut buf = Vec::new();
        tag(&mut buf, 16, FIXED32);
        assert_eq!(buf, [0x85, 0x01]);
    }
}
