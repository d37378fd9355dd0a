//! Response compression negotiated by `Accept-Encoding`: brotli or gzip for bodies over
//! [`MIN_BYTES`] of a compressible type (JSON, problem+json, YAML, HTML, CSS, JavaScript),
//! with `Vary: Accept-Encoding` on every response of such a type, compressed or not, so a
//! shared cache keeps the representations apart.
//!
//! Why not actix-web's `Compress` middleware: it compresses every body however small (a
//! 300-byte write answer would pay an encoder and gain nothing), and a request whose
//! `Accept-Encoding` admits nothing it supports gets a bare `406 text/plain`, not the
//! contract's problem+json. Here such a request, like one without the header, gets the
//! identity encoding (RFC 9110 §12.5.3: identity is acceptable unless excluded, and a
//! server may then answer without content coding). The encoding itself is actix-http's
//! `actix_http::encoding::Encoder`, the one `Compress` uses.

use actix_web::HttpRequest;
use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::header::{
    self, AcceptEncoding, CONTENT_ENCODING, CONTENT_TYPE, ContentEncoding, Encoding, Header, HeaderValue,
    Preference, Quality, VARY,
};

/// Bodies of at most this many bytes are sent as they are: compressing them saves a few
/// bytes at the cost of an encoder per response.
pub const MIN_BYTES: u64 = 1024;

/// The encodings offered, most preferred first.
const OFFERED: [Encoding; 2] = [Encoding::brotli(), Encoding::gzip()];

/// Whether a response of this `Content-Type` is worth compressing (text and JSON; images
/// and fonts are compressed already).
fn compressible(content_type: &[u8]) -> bool {
    let essence = content_type.split(|b| *b == b';').next().unwrap_or_default().trim_ascii();
    let starts =
        |prefix: &[u8]| essence.len() >= prefix.len() && essence[..prefix.len()].eq_ignore_ascii_case(prefix);
    let ends = |suffix: &[u8]| {
        essence.len() >= suffix.len() && essence[essence.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    starts(b"text/") || ends(b"json") || ends(b"yaml") || ends(b"javascript")
}

/// `Vary: accept-encoding`, checked once at compile time.
const VARY_ENCODING: HeaderValue = HeaderValue::from_static("accept-encoding");

/// The encoding to answer `req` with, from its `Accept-Encoding`: of brotli and gzip, the
/// one the client gives the higher weight (listed by name, else through `*`), brotli on a
/// tie; none (identity) when the client accepts neither or sends no header.
pub fn negotiate(req: &HttpRequest) -> Option<ContentEncoding> {
    if !req.headers().contains_key(header::ACCEPT_ENCODING) {
        return None;
    }
    let accepted = AcceptEncoding::parse(req).ok()?;
    let weight = |offered: &Encoding| {
        let named =
            accepted.iter().find(|item| matches!(&item.item, Preference::Specific(e) if e == offered));
        named.or_else(|| accepted.iter().find(|item| item.item == Preference::Any)).map(|item| item.quality)
    };
    let mut best: Option<(ContentEncoding, Quality)> = None;
    for (offered, encoding) in OFFERED.iter().zip([ContentEncoding::Brotli, ContentEncoding::Gzip]) {
        if let Some(quality) = weight(offered).filter(|q| *q > Quality::ZERO)
            && best.is_none_or(|(_, b)| quality > b)
        {
            best = Some((encoding, quality));
        }
    }
    best.map(|(encoding, _)| encoding)
}

/// `response`, compressed with `encoding` (from [`negotiate`], `None` for identity) when
/// its body is over [`MIN_BYTES`] and of a compressible type; `Vary: Accept-Encoding` on
/// every response of a compressible type.
pub fn encode(
    mut response: ServiceResponse<BoxBody>,
    encoding: Option<ContentEncoding>,
) -> ServiceResponse<BoxBody> {
    let Some(content_type) = response.headers().get(CONTENT_TYPE) else { return response };
    if !compressible(content_type.as_bytes()) || response.headers().contains_key(CONTENT_ENCODING) {
        return response;
    }
    response.headers_mut().append(VARY, VARY_ENCODING);
    let large = match response.response().body().size() {
        BodySize::Sized(n) => n > MIN_BYTES,
        BodySize::Stream => true,
        BodySize::None => false,
    };
    match encoding {
        Some(encoding) if large => response.map_body(|head, body| {
            let encoded = actix_http::encoding::Encoder::response(encoding, head, body);
            // `Encoder::response` added its own `Vary`: keep one.
            dedupe_vary(head.headers_mut());
            BoxBody::new(encoded)
        }),
        _ => response,
    }
}

/// Leaves one `Vary: accept-encoding` where the encoder added a second.
fn dedupe_vary(headers: &mut header::HeaderMap) {
    let values: Vec<HeaderValue> = headers.get_all(VARY).cloned().collect();
    let mut kept: Vec<HeaderValue> = Vec::with_capacity(values.len());
    for value in values {
        if !kept.iter().any(|k| k.as_bytes().eq_ignore_ascii_case(value.as_bytes())) {
            kept.push(value);
        }
    }
    headers.remove(VARY);
    for value in kept {
        headers.append(VARY, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_types_are_compressible_and_images_are_not() {
        for t in [
            "application/json",
            "application/problem+json",
            "application/yaml",
            "text/html; charset=utf-8",
            "text/css",
            "application/javascript",
            "Application/JSON",
        ] {
            assert!(compressible(t.as_bytes()), "{t}");
        }
        for t in ["image/png", "font/woff2", "application/octet-stream"] {
            assert!(!compressible(t.as_bytes()), "{t}");
        }
    }
}
