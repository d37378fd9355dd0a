//! OTLP's `ExportTraceServiceRequest`, encoded as protobuf: each span when it ends
//! ([`span`], on the request's thread; a child span, and an operation's server span, from
//! its kind's [`Skeleton`], with its ids, times and flags filled in), the message around a
//! batch of them on export ([`Envelope`]).
//!
//! Hand-written because it runs at the span rate: the message has a handful of fields
//! (opentelemetry-proto's `trace.proto`, `common.proto`, `resource.proto`), and encoding
//! them in one pass into one buffer costs a fraction of building the generated message
//! structs (a `String` per attribute key) and encoding those. `scripts/check-tracing`
//! decodes what this writes with the published opentelemetry-proto package.

use super::span::{Attribute, Kind, SpanRecord, Value};

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

/// How many bytes a field's tag takes.
const fn tag_len(field: u32) -> usize {
    varint_len((field << 3) as u64)
}

/// How many bytes a length-delimited field of `length` bytes takes, tag and length told.
const fn len_field(field: u32, length: usize) -> usize {
    tag_len(field) + varint_len(length as u64) + length
}

/// The length of an `AnyValue` holding `value`.
const fn value_len(value: &Value<'_>) -> usize {
    match *value {
        Value::Str(text) => len_field(1, text.len()),
        Value::Bool(_) => 2,
        Value::Int(number) => 1 + varint_len(number as u64),
    }
}

/// The length of a `KeyValue` holding `attribute`.
const fn attribute_len(attribute: &Attribute<'_>) -> usize {
    len_field(1, attribute.key.len()) + len_field(2, value_len(&attribute.value))
}

/// The room made for one span, written front to back: the hot path's writer. Its
/// length was worked out first, so nothing here grows a buffer or moves what it wrote,
/// and fixed-size fields are copied as such (no call to `memcpy` for an id).
struct Room<'a> {
    room: &'a mut [u8],
    at: usize,
}

impl Room<'_> {
    fn byte(&mut self, byte: u8) {
        self.room[self.at] = byte;
        self.at += 1;
    }

    fn fixed<const N: usize>(&mut self, data: &[u8; N]) {
        self.room[self.at..self.at + N].copy_from_slice(data);
        self.at += N;
    }

    fn slice(&mut self, data: &[u8]) {
        self.room[self.at..self.at + data.len()].copy_from_slice(data);
        self.at += data.len();
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.byte((value as u8) | 0x80);
            value >>= 7;
        }
        self.byte(value as u8);
    }

    fn tag(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    /// A length-delimited field's tag and length, its content to follow.
    fn len(&mut self, field: u32, length: usize) {
        self.tag(field, LEN);
        self.varint(length as u64);
    }

    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.len(field, data.len());
        self.slice(data);
    }

    fn id<const N: usize>(&mut self, field: u32, id: &[u8; N]) {
        self.len(field, N);
        self.fixed(id);
    }

    /// `KeyValue { key = 1; value = 2 (AnyValue) }`, as field `field`.
    fn attribute(&mut self, field: u32, attribute: &Attribute<'_>) {
        self.len(field, attribute_len(attribute));
        self.bytes(1, attribute.key.as_bytes());
        self.len(2, value_len(&attribute.value));
        match attribute.value {
            Value::Str(text) => self.bytes(1, text.as_bytes()),
            Value::Bool(flag) => {
                self.tag(2, VARINT);
                self.varint(u64::from(flag));
            }
            Value::Int(number) => {
                self.tag(3, VARINT);
                self.varint(number as u64);
            }
        }
    }
}

/// The length of a `Span.Link`: trace id, span id and flags.
const LINK_LEN: usize = len_field(1, 16) + len_field(2, 8) + 5;

/// The length of the error `Status` whose message is `message`.
const fn status_len(message: &str) -> usize {
    len_field(2, message.len()) + 2
}

/// The fields of a `Span` that are the same for every span of one kind of work — its
/// name, kind and constant attributes — encoded once, for [`span`] to copy as they are
/// (the order of a message's fields is free, and repeated ones keep theirs).
pub fn fixed(name: &str, kind: Kind, attributes: &[Attribute<'_>]) -> Vec<u8> {
    let length = len_field(5, name.len())
        + 1
        + varint_len(kind as u64)
        + attributes.iter().map(|a| len_field(9, attribute_len(a))).sum::<usize>();
    let mut buf = vec![0; length];
    let mut out = Room { room: &mut buf, at: 0 };
    out.bytes(5, name.as_bytes());
    out.tag(6, VARINT);
    out.varint(kind as u64);
    for a in attributes {
        out.attribute(9, a);
    }
    debug_assert_eq!(out.at, length, "fixed's length disagrees with what it wrote");
    buf
}

/// The length of the fields of `span`'s `Span` message that [`Skeleton`] leaves to each
/// span: what [`rest`] writes.
fn rest_len(span: &SpanRecord<'_>) -> usize {
    let mut length = 0;
    if let Some(state) = span.trace_state {
        length += len_field(3, state.len());
    }
    if span.parent.is_some() {
        length += len_field(4, 8);
    }
    for a in span.attributes {
        length += len_field(9, attribute_len(a));
    }
    length += span.links.len() * len_field(13, LINK_LEN);
    if let Some(message) = span.error {
        length += len_field(15, status_len(message));
    }
    length
}

/// The length of the fields [`head`] writes: the same for every span of one fixed part.
const fn head_len(fixed: &[u8]) -> usize {
    len_field(1, 16) + len_field(2, 8) + fixed.len() + 2 * 9 + tag_len(16) + 4
}

/// The span's flags: sampled or not, and whether its parent is remote (known either way).
fn flags(span: &SpanRecord<'_>) -> u32 {
    let remote = matches!(span.parent, Some((_, true)));
    u32::from(span.context.sampled) | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 }
}

/// The fields every span has, of fixed size for one fixed part, written first: trace id,
/// span id, the fixed part (name, kind, constant attributes), start, end and flags.
fn head(out: &mut Room<'_>, span: &SpanRecord<'_>) {
    out.id(1, &span.context.trace_id);
    out.id(2, &span.context.span_id);
    out.slice(span.fixed);
    out.tag(7, FIXED64);
    out.fixed(&span.start.to_le_bytes());
    out.tag(8, FIXED64);
    out.fixed(&span.end.to_le_bytes());
    out.tag(16, FIXED32);
    out.fixed(&flags(span).to_le_bytes());
}

/// The fields that differ from span to span, written after [`head`]'s (the order of a
/// message's fields is free): `tracestate`, parent, attributes, links and error status.
fn rest(out: &mut Room<'_>, span: &SpanRecord<'_>) {
    if let Some(state) = span.trace_state {
        out.bytes(3, state.as_bytes());
    }
    if let Some((parent, _)) = &span.parent {
        out.id(4, parent);
    }
    for a in span.attributes {
        out.attribute(9, a);
    }
    for link in span.links {
        out.len(13, LINK_LEN);
        out.id(1, &link.trace_id);
        out.id(2, &link.span_id);
        out.tag(6, FIXED32);
        out.fixed(&(1 | HAS_IS_REMOTE).to_le_bytes());
    }
    if let Some(message) = span.error {
        out.len(15, status_len(message));
        out.bytes(2, message.as_bytes());
        out.tag(3, VARINT);
        out.varint(STATUS_ERROR);
    }
}

/// The field of `ScopeSpans` that holds a span.
const SPANS_FIELD: u32 = 2;

/// Appends `span` to `buf` as one `spans` field of `ScopeSpans` (field numbers of
/// `trace.proto`): a run of these follows what [`Envelope::head`] writes. Its length is
/// worked out first, so it is written in one pass, after room is made once.
pub fn span(buf: &mut Vec<u8>, span: &SpanRecord<'_>) {
    let length = head_len(span.fixed) + rest_len(span);
    let start = buf.len();
    buf.resize(start + len_field(SPANS_FIELD, length), 0);
    let mut out = Room { room: &mut buf[start..], at: 0 };
    out.len(SPANS_FIELD, length);
    head(&mut out, span);
    rest(&mut out, span);
    debug_assert_eq!(out.at, out.room.len(), "the span's length disagrees with what was written");
}

/// A child span of one fixed part (a parent in this process and nothing else of its own),
/// encoded whole once with its ids and times left zero: its tag and length, its [`head`],
/// its parent's id. The head's ids, times and flags are fixed-size fields at fixed places,
/// so a span of this fixed part is written without writing a field: a child span is the
/// whole copied and five fields filled in ([`Skeleton::write_child`]); any other span the
/// head copied and filled in, then its [`rest`] ([`Skeleton::write`]: the server spans of
/// an operation).
#[derive(Debug)]
pub struct Skeleton {
    child: Box<[u8]>,
    /// Where the head starts in `child` (after the tag and length).
    body: usize,
    /// The fixed part, as [`head`] took it.
    fixed_len: usize,
}

/// The length of the parent's id as a field: what follows the head in a child span.
const PARENT_FIELD: usize = len_field(4, 8);

/// Where [`head`] puts the trace id, the span id, the start and the end and the flags,
/// for a fixed part of `fixed_len` bytes (each id after a tag and a length byte, each
/// time after a one-byte tag, the flags after a two-byte one).
const fn head_offsets(fixed_len: usize) -> [usize; 5] {
    let trace = 2;
    let span = trace + 16 + 2;
    let start = span + 8 + fixed_len + 1;
    let end = start + 8 + 1;
    let flags = end + 8 + 2;
    [trace, span, start, end, flags]
}

impl Skeleton {
    /// The skeleton of the spans whose name, kind and constant attributes are `fixed`.
    pub fn new(fixed: &[u8]) -> Skeleton {
        let shape = SpanRecord {
            context: super::context::SpanContext { trace_id: [0; 16], span_id: [0; 8], sampled: true },
            parent: Some(([0; 8], false)),
            trace_state: None,
            fixed,
            start: 0,
            end: 0,
            attributes: &[],
            links: &[],
            error: None,
        };
        let mut child = Vec::new();
        span(&mut child, &shape);
        let body = child.len() - PARENT_FIELD - head_len(fixed);
        Skeleton { child: child.into_boxed_slice(), body, fixed_len: fixed.len() }
    }

    /// The fixed part it was made from.
    pub fn fixed(&self) -> &[u8] {
        let [_, id, ..] = head_offsets(self.fixed_len);
        &self.head()[id + 8..id + 8 + self.fixed_len]
    }

    /// The head, as in the child span (its flags are overwritten for any other).
    fn head(&self) -> &[u8] {
        &self.child[self.body..self.child.len() - PARENT_FIELD]
    }

    /// Appends the span's tag and length, and its head for `span`'s ids, times and flags.
    fn write_head(&self, buf: &mut Vec<u8>, length: usize, span: &SpanRecord<'_>) {
        tag(buf, SPANS_FIELD, LEN);
        varint(buf, length as u64);
        let at = buf.len();
        buf.extend_from_slice(self.head());
        let out = &mut buf[at..];
        let [trace, id, start, end, flag] = head_offsets(self.fixed_len);
        out[trace..trace + 16].copy_from_slice(&span.context.trace_id);
        out[id..id + 8].copy_from_slice(&span.context.span_id);
        out[start..start + 8].copy_from_slice(&span.start.to_le_bytes());
        out[end..end + 8].copy_from_slice(&span.end.to_le_bytes());
        out[flag..flag + 4].copy_from_slice(&flags(span).to_le_bytes());
    }

    /// Appends `span` (whose fixed part is taken to be this skeleton's) to `buf`, as
    /// [`span`] writes it.
    pub fn write(&self, buf: &mut Vec<u8>, span: &SpanRecord<'_>) {
        let rest_length = rest_len(span);
        self.write_head(buf, self.head().len() + rest_length, span);
        let at = buf.len();
        buf.resize(at + rest_length, 0);
        let mut out = Room { room: &mut buf[at..], at: 0 };
        rest(&mut out, span);
        debug_assert_eq!(out.at, rest_length, "rest_len disagrees with what rest wrote");
    }

    /// Appends a sampled span of this shape to `buf`: in trace `trace_id`, with id
    /// `span_id`, child of `parent` (in this process), from `start` to `end` (nanoseconds
    /// since the Unix epoch).
    pub fn write_child(
        &self,
        buf: &mut Vec<u8>,
        trace_id: &[u8; 16],
        span_id: &[u8; 8],
        parent: &[u8; 8],
        start: u64,
        end: u64,
    ) {
        let at = buf.len();
        buf.extend_from_slice(&self.child);
        let out = &mut buf[at..];
        let (out, parent_at) = out.split_at_mut(out.len() - 8);
        parent_at.copy_from_slice(parent);
        let [trace, id, from, to, _] = head_offsets(self.fixed_len).map(|offset| self.body + offset);
        out[trace..trace + 16].copy_from_slice(trace_id);
        out[id..id + 8].copy_from_slice(span_id);
        out[from..from + 8].copy_from_slice(&start.to_le_bytes());
        out[to..to + 8].copy_from_slice(&end.to_le_bytes());
    }
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
const fn varint_len(value: u64) -> usize {
    // Seven bits a byte, and one byte for zero.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// What every `ExportTraceServiceRequest` from this process says around its spans: the
/// resource and the instrumentation scope, encoded once.
pub struct Envelope {
    resource: Vec<u8>,
    scope: Vec<u8>,
}

impl Envelope {
    /// The envelope of `origin`.
    pub fn new(origin: &Origin) -> Envelope {
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
        Envelope { resource, scope }
    }

    /// Writes into `buf` (cleared first) what an `ExportTraceServiceRequest` says before
    /// its spans: one `ResourceSpans` holding one `ScopeSpans` whose spans, `spans_len`
    /// bytes of them as [`span`] wrote them, follow it (the exporter sends them from where
    /// they are, uncopied).
    pub fn head(&self, buf: &mut Vec<u8>, spans_len: usize) {
        let scope_spans = (self.scope.len() + spans_len) as u64;
        let resource_spans = self.resource.len() as u64 + 1 + varint_len(scope_spans) as u64 + scope_spans;
        buf.clear();
        tag(buf, 1, LEN);
        varint(buf, resource_spans);
        buf.extend_from_slice(&self.resource);
        tag(buf, 2, LEN);
        varint(buf, scope_spans);
        buf.extend_from_slice(&self.scope);
    }
}

/// A bare internal span `name` of a fixed trace, for the encoding tests (its fixed part
/// is leaked: tests only).
#[cfg(test)]
pub fn test_span(name: &str) -> SpanRecord<'static> {
    SpanRecord {
        context: super::context::SpanContext { trace_id: [1; 16], span_id: [2; 8], sampled: true },
        parent: None,
        trace_state: None,
        fixed: Box::leak(fixed(name, Kind::Internal, &[]).into_boxed_slice()),
        start: 1,
        end: 2,
        attributes: &[],
        links: &[],
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_span_written_from_its_skeleton_is_the_span_encoded_in_full() {
        let fixed = fixed(
            "database",
            Kind::Internal,
            &[
                Attribute::new("db.system.name", Value::Str("sqlite")),
                Attribute::new("wpds.db.sqlite_writer", Value::Bool(true)),
            ],
        );
        // A long fixed part too: the span's length then takes two bytes.
        let long = fixed_long();
        for fixed in [&fixed[..], &long[..]] {
            let skeleton = Skeleton::new(fixed);
            for (start, end) in
                [(0, 0), (1_764_000_000_123_456_789, 1_764_000_000_123_999_999), (u64::MAX, 1)]
            {
                let record = SpanRecord {
                    context: super::super::context::SpanContext {
                        trace_id: *b"0123456789abcdef",
                        span_id: *b"span-id!",
                        sampled: true,
                    },
                    parent: Some((*b"parent!!", false)),
                    trace_state: None,
                    fixed,
                    start,
                    end,
                    attributes: &[],
                    links: &[],
                    error: None,
                };
                let (mut full, mut written) = (b"before".to_vec(), b"before".to_vec());
                span(&mut full, &record);
                skeleton.write_child(&mut written, b"0123456789abcdef", b"span-id!", b"parent!!", start, end);
                assert_eq!(written, full, "fixed part of {} bytes, times {start}..{end}", fixed.len());
            }
        }
    }

    fn fixed_long() -> Vec<u8> {
        fixed("a long name", Kind::Internal, &[Attribute::new("note", Value::Str(&"x".repeat(200)))])
    }

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

    /// The attribute `a` as the straightforward encoding writes it.
    fn attribute_by_nesting(buf: &mut Vec<u8>, a: &Attribute<'_>) {
        nested(buf, 9, |buf| {
            bytes(buf, 1, a.key.as_bytes());
            nested(buf, 2, |buf| match a.value {
                Value::Str(text) => bytes(buf, 1, text.as_bytes()),
                Value::Bool(flag) => {
                    tag(buf, 2, VARINT);
                    varint(buf, u64::from(flag));
                }
                Value::Int(number) => {
                    tag(buf, 3, VARINT);
                    varint(buf, number as u64);
                }
            });
        });
    }

    /// A span named `name` of `kind` with the constant attributes `constant` as the
    /// straightforward encoding writes it: each nested message's length put before it
    /// once written ([`nested`]), every field in place, nothing encoded beforehand.
    fn by_nesting(
        buf: &mut Vec<u8>,
        span: &SpanRecord<'_>,
        name: &str,
        kind: Kind,
        constant: &[Attribute<'_>],
    ) {
        nested(buf, SPANS_FIELD, |buf| {
            bytes(buf, 1, &span.context.trace_id);
            bytes(buf, 2, &span.context.span_id);
            bytes(buf, 5, name.as_bytes());
            tag(buf, 6, VARINT);
            varint(buf, kind as u64);
            for a in constant {
                attribute_by_nesting(buf, a);
            }
            tag(buf, 7, FIXED64);
            buf.extend_from_slice(&span.start.to_le_bytes());
            tag(buf, 8, FIXED64);
            buf.extend_from_slice(&span.end.to_le_bytes());
            let mut flags = u32::from(span.context.sampled) | HAS_IS_REMOTE;
            if let Some((_, true)) = &span.parent {
                flags |= IS_REMOTE;
            }
            tag(buf, 16, FIXED32);
            buf.extend_from_slice(&flags.to_le_bytes());
            if let Some(state) = span.trace_state {
                bytes(buf, 3, state.as_bytes());
            }
            if let Some((parent, _)) = &span.parent {
                bytes(buf, 4, parent);
            }
            for a in span.attributes {
                attribute_by_nesting(buf, a);
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
        });
    }

    #[test]
    fn a_span_sized_first_is_written_as_nesting_writes_it() {
        use crate::telemetry::span::Link;
        let long = "x".repeat(200);
        let links = vec![Link { trace_id: [3; 16], span_id: [4; 8] }; 5];
        let constant = [
            Attribute::new("http.request.method", Value::Str("PUT")),
            Attribute::new("wpds.db.sqlite_writer", Value::Bool(true)),
        ];
        let varying = [
            Attribute::new("url.path", Value::Str(&long)),
            Attribute::new("http.response.status_code", Value::Int(503)),
            Attribute::new("negative", Value::Int(-1)),
        ];
        let server_fixed = fixed(&long, Kind::Server, &constant);
        let full = SpanRecord {
            parent: Some(([9; 8], true)),
            trace_state: Some("vendor=value"),
            fixed: &server_fixed,
            attributes: &varying,
            links: &links,
            error: Some("answered 503"),
            ..test_span("unused")
        };
        let bare = test_span("validation");
        let local_parent = SpanRecord { parent: Some(([5; 8], false)), ..test_span("database") };
        let cases = [
            (full, long.as_str(), Kind::Server, &constant[..]),
            (bare, "validation", Kind::Internal, &[][..]),
            (local_parent, "database", Kind::Internal, &[][..]),
        ];
        for (record, name, kind, constant) in cases {
            let (mut sized, mut nesting, mut skeleton) = (Vec::new(), Vec::new(), b"before".to_vec());
            span(&mut sized, &record);
            by_nesting(&mut nesting, &record, name, kind, constant);
            assert_eq!(sized, nesting, "{name}");
            let made = Skeleton::new(record.fixed);
            assert_eq!(made.fixed(), record.fixed, "{name}");
            made.write(&mut skeleton, &record);
            assert_eq!(skeleton[6..], sized, "{name}, from its skeleton");
        }
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
