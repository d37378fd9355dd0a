//! Time as the contract shows it: RFC 3339, UTC, milliseconds, `Z`.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// `2026-11-21T15:31:52.437Z` for a millisecond timestamp.
pub fn format_millis(millis: i64) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let (date, clock) = (at.date(), at.time());
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        date.year(),
        u8::from(date.month()),
        date.day(),
        clock.hour(),
        clock.minute(),
        clock.second(),
        clock.millisecond()
    )
}

/// Reads an RFC 3339 timestamp (any offset, any precision) into milliseconds.
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) fn parse_millis(text: &str) -> Option<i64> {
    let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    Some((at.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// The present UTC month, `YYYY-MM`.
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) fn current_month() -> String {
    let now = OffsetDateTime::now_utc();
    format!("{:04}-{:02}", now.year(), u8::from(now.month()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_and_z() {
        assert_eq!(format_millis(1_763_739_112_437), "2025-11-21T15:31:52.437Z");
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn parses_what_it_formats_and_other_offsets() {
        assert_eq!(parse_millis("2025-11-21T15:31:52.437Z"), Some(1_763_739_112_437));
        assert_eq!(parse_millis("2025-11-21T16:31:52.437+01:00"), Some(1_763_739_112_437));
        assert_eq!(parse_millis("yesterday"), None);
    }
}
