//! Identifiers: 64-bit integers in storage, decimal strings on the wire.

/// The record id a path or body string names, if it can name one: decimal digits with no
/// sign and no leading zero, within the 64-bit range. Anything else names no record.
pub fn parse(text: &str) -> Option<i64> {
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok()
}

/// The wire form of an id.
pub fn show(id: i64) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_digit_strings_in_range_name_records() {
        assert_eq!(parse("7"), Some(7));
        assert_eq!(parse("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse("9223372036854775808"), None);
        assert_eq!(parse("9999999999999999999"), None);
        for bad in ["", "0", "07", "-7", "+7", "7a", " 7"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
