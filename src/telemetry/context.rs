//! A span's identity, the W3C Trace Context it arrives in (`traceparent`, `tracestate`),
//! and the span a request's code runs in.
//!
//! The current span is a thread-local that [`Within`] sets while it polls the future it
//! wraps: actix-web polls a request's future on one worker thread, so whatever that future
//! runs (authentication, validation, database calls) sees its request's span without it
//! being passed down. Setting it costs a thread-local write per poll.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Who a span is: its trace, its own id, and whether it is sampled (recorded and exported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace's 16-byte id (never all zeros).
    pub trace_id: [u8; 16],
    /// The span's 8-byte id (never all zeros).
    pub span_id: [u8; 8],
    /// Whether the span is recorded (the W3C `sampled` flag).
    pub sampled: bool,
}

impl SpanContext {
    /// The trace id as 32 lowercase hexadecimal digits.
    pub fn trace_hex(&self) -> String {
        hex(&self.trace_id)
    }
}

/// The caller's span, read off an incoming request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// The caller's span (`traceparent`).
    pub context: SpanContext,
    /// The vendors' state carried along (`tracestate`), when present and well-formed.
    pub trace_state: Option<String>,
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Reads `N` bytes from lowercase hexadecimal (the W3C format allows no uppercase).
fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let nibble = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// Parses a `traceparent` header (W3C Trace Context, level 1): `00-{trace}-{span}-{flags}`;
/// a later version is read by its first four fields, as the recommendation asks.
/// `None` for anything malformed, version `ff`, or an all-zero trace or span id.
pub fn parse_traceparent(value: &str) -> Option<SpanContext> {
    let value = value.trim_matches([' ', '\t']);
    let version: [u8; 1] = unhex(value.get(..2)?)?;
    let fixed = value.get(..55)?;
    match version[0] {
        0xff => return None,
        0x00 if value.len() != 55 => return None,
        0x00 => {}
        _ if value.len() > 55 && value.as_bytes()[55] != b'-' => return None,
        _ => {}
    }
    let bytes = fixed.as_bytes();
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    let trace_id: [u8; 16] = unhex(&fixed[3..35])?;
    let span_id: [u8; 8] = unhex(&fixed[36..52])?;
    let flags: [u8; 1] = unhex(&fixed[53..55])?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(SpanContext { trace_id, span_id, sampled: flags[0] & 1 == 1 })
}

/// A `tracestate` header's value, kept when well-formed (at most 32 `key=value` members,
/// keys of `[a-z0-9_*/@-]` starting with a letter or digit, values of printable ASCII
/// without `,` and `=`, at most 512 bytes in all); `None` otherwise, as the recommendation
/// allows (the trace itself still continues).
pub fn parse_trace_state(value: &str) -> Option<String> {
    let value = value.trim_matches([' ', '\t']);
    if value.is_empty() || value.len() > 512 {
        return None;
    }
    let mut members = 0;
    for member in value.split(',').map(|m| m.trim_matches([' ', '\t'])).filter(|m| !m.is_empty()) {
        members += 1;
        let (key, val) = member.split_once('=')?;
        let key_ok = key.len() <= 256
            && key.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && key.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'*' | b'/' | b'@')
            });
        let value_ok = (1..=256).contains(&val.len())
            && !val.ends_with(' ')
            && val.bytes().all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        if !key_ok || !value_ok || members > 32 {
            return None;
        }
    }
    (members > 0).then(|| value.to_owned())
}

thread_local! {
    /// The span the code running on this thread belongs to.
    static CURRENT: Cell<Option<SpanContext>> = const { Cell::new(None) };
}

/// The span the running code belongs to, if any.
pub fn current() -> Option<SpanContext> {
    CURRENT.with(Cell::get)
}

pin_project_lite::pin_project! {
    /// A future that runs as part of a span: [`current`] answers that span while it polls.
    pub struct Within<F> {
        context: SpanContext,
        #[pin]
        inner: F,
    }
}

impl<F> Within<F> {
    /// `inner`, run as part of `context`.
    pub fn new(context: SpanContext, inner: F) -> Self {
        Within { context, inner }
    }
}

/// Puts the previous current span back, also when the polled future panics.
struct Restore(Option<SpanContext>);

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(self.0));
    }
}

impl<F: Future> Future for Within<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        poll_within(*this.context, this.inner, cx)
    }
}

/// Polls `inner` with `context` as the current span, the previous one put back after.
pub fn poll_within<F: Future>(
    context: SpanContext,
    inner: Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<F::Output> {
    let _restore = Restore(CURRENT.with(|current| current.replace(Some(context))));
    inner.poll(cx)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn a_well_formed_traceparent_is_read_with_its_sampled_flag() {
        let context = parse_traceparent(&format!("00-{TRACE}-00f067aa0ba902b7-01")).expect("valid");
        assert_eq!(context.trace_hex(), TRACE);
        assert_eq!(hex(&context.span_id), "00f067aa0ba902b7");
        assert!(context.sampled);
        assert!(!parse_traceparent(&format!("00-{TRACE}-00f067aa0ba902b7-00")).expect("valid").sampled);
    }

    #[test]
    fn a_malformed_traceparent_is_ignored() {
        for bad in [
            String::new(),
            format!("00-{TRACE}-00f067aa0ba902b7-0"),
            format!("00-{TRACE}-00f067aa0ba902b7-01-extra"),
            format!("ff-{TRACE}-00f067aa0ba902b7-01"),
            format!("00-{}-00f067aa0ba902b7-01", TRACE.to_uppercase()),
            format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)),
            format!("00-{TRACE}-0000000000000000-01"),
            format!("00_{TRACE}-00f067aa0ba902b7-01"),
            format!("0g-{TRACE}-00f067aa0ba902b7-01"),
            "00-é".repeat(20),
        ] {
            assert_eq!(parse_traceparent(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        assert!(parse_traceparent(&format!("01-{TRACE}-00f067aa0ba902b7-01-future")).is_some());
        assert!(parse_traceparent(&format!("01-{TRACE}-00f067aa0ba902b7-01x")).is_none());
    }

    #[test]
    fn tracestate_is_kept_only_when_well_formed() {
        assert_eq!(
            parse_trace_state("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE").as_deref(),
            Some("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE")
        );
        assert_eq!(parse_trace_state("tenant@vendor=x").as_deref(), Some("tenant@vendor=x"));
        for bad in
            ["", "novalue", "Upper=1", "k=a,b", "k=", &"k=v,".repeat(33), &format!("k={}", "v".repeat(600))]
        {
            assert_eq!(parse_trace_state(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn within_sets_the_current_span_only_while_polling() {
        let context = parse_traceparent(&format!("00-{TRACE}-00f067aa0ba902b7-01")).expect("valid");
        let seen = futures_util::FutureExt::now_or_never(Within::new(context, async { current() }));
        assert_eq!(seen, Some(Some(context)));
        assert_eq!(current(), None);
    }
}
