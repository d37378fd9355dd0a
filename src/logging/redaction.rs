//! What a log line or a span may not carry of a request's URL: the values of credential-like
//! query keys. One function, [`redacted_query`], used wherever a query is written (the access
//! log's line and the server span's `url.query`), so the two never disagree.
//!
//! A client that puts a token in the URL (`?access_token=…`, `?api_key=…`) has already made a
//! mistake; the server must not make it worse by writing the credential into logs that many
//! people and systems read. The list follows what widely used log redactors cover (the
//! OpenTelemetry HTTP conventions' signature keys, OAuth 2.0's token parameters, cloud storage
//! signatures, API keys and passwords), matched leniently so a spelling variant does not slip
//! through.

use std::borrow::Cow;

/// What replaces a credential-like value.
pub const REDACTED: &str = "REDACTED";

/// A key is credential-like when, percent-decoded, lower-cased and without `-` and `_`, it
/// contains one of these (`access_token`, `X-Amz-Security-Token`, `client_secret`,
/// `X-Goog-Signature`, `apiKey`, `x-api-key`, `SessionId`, …)…
pub const CREDENTIAL_KEY_PARTS: [&str; 8] =
    ["token", "secret", "password", "passwd", "apikey", "signature", "credential", "session"];

/// …or is one of these (`sig`, `key`, `AWSAccessKeyId`, …).
pub const CREDENTIAL_KEYS: [&str; 8] =
    ["sig", "key", "pwd", "auth", "authorization", "jwt", "bearer", "awsaccesskeyid"];

/// `query` (without its `?`) as logs and spans may write it: the value of every
/// credential-like key (see [`CREDENTIAL_KEY_PARTS`] and [`CREDENTIAL_KEYS`]) replaced by
/// [`REDACTED`], everything else as sent. Borrowed unless something is redacted.
pub fn redacted_query(query: &str) -> Cow<'_, str> {
    let sensitive = |pair: &str| pair.split_once('=').is_some_and(|(key, _)| is_credential_key(key));
    if !query.split('&').any(sensitive) {
        return Cow::Borrowed(query);
    }
    let pairs: Vec<Cow<'_, str>> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_credential_key(key) => Cow::Owned(format!("{key}={REDACTED}")),
            _ => Cow::Borrowed(pair),
        })
        .collect();
    Cow::Owned(pairs.join("&"))
}

/// Whether a query key (as sent, possibly percent-encoded) names a credential.
fn is_credential_key(key: &str) -> bool {
    let normalized: String = percent_decoded(key)
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    CREDENTIAL_KEYS.contains(&normalized.as_str())
        || CREDENTIAL_KEY_PARTS.iter().any(|part| normalized.contains(part))
}

/// `text` with `%XX` escapes (and `+`, a space in a form-encoded query) decoded, bytes that
/// are not UTF-8 replaced; a malformed escape is kept as it is.
fn percent_decoded(text: &str) -> Cow<'_, str> {
    if !text.contains(['%', '+']) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let hex = |at: usize| bytes.get(at).and_then(|&b| (b as char).to_digit(16));
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::redacted_query;

    #[test]
    fn a_query_without_credentials_is_written_as_sent() {
        assert_eq!(redacted_query(""), "");
        assert_eq!(
            redacted_query("limit=25&cursor=abc&outcome=accepted"),
            "limit=25&cursor=abc&outcome=accepted"
        );
        // A key without a value has nothing to hide.
        assert_eq!(redacted_query("token&limit=1"), "token&limit=1");
    }

    #[test]
    fn signature_keys_are_redacted_as_before() {
        assert_eq!(
            redacted_query("limit=25&sig=secret&Signature=x"),
            "limit=25&sig=REDACTED&Signature=REDACTED"
        );
        assert_eq!(
            redacted_query("AWSAccessKeyId=AKIA&X-Goog-Signature=y&X-Amz-Security-Token=z"),
            "AWSAccessKeyId=REDACTED&X-Goog-Signature=REDACTED&X-Amz-Security-Token=REDACTED"
        );
    }

    #[test]
    fn credential_keys_are_redacted_in_any_case_and_spelling() {
        for key in [
            "access_token",
            "ACCESS_TOKEN",
            "accessToken",
            "refresh-token",
            "id_token",
            "token",
            "api_key",
            "apiKey",
            "x-api-key",
            "key",
            "password",
            "Passwd",
            "pwd",
            "client_secret",
            "auth",
            "Authorization",
            "jwt",
            "bearer",
            "sessionId",
            "credentials",
            "access%5Ftoken",
            "api%2Dkey",
        ] {
            assert_eq!(
                redacted_query(&format!("limit=5&{key}=s3cr3t")),
                format!("limit=5&{key}=REDACTED"),
                "{key}"
            );
        }
    }

    #[test]
    fn keys_that_only_look_alike_are_kept() {
        assert_eq!(redacted_query("monkey=1&keyword=2&author=3"), "monkey=1&keyword=2&author=3");
    }
}
