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
pub(crate) fn show(id: i64) -> String {
    id.to_string()
}

/// An id a request body names, parsed once (by the handler): the record id, or the text
/// as sent when it cannot name a record. Rule messages quote an id as it was sent, so the
/// text of one that names nothing is kept; a record id's text is its canonical form.
/// Two `SentId`s are equal exactly when their texts are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SentId {
    /// An id that can name a record.
    Record(i64),
    /// Text that names no record (not canonical digits, or beyond 64 bits), as sent.
    NoRecord(String),
}

impl SentId {
    /// The id `text` names, if it can name one.
    pub fn parse(text: String) -> Self {
        match parse(&text) {
            Some(id) => SentId::Record(id),
            None => SentId::NoRecord(text),
        }
    }

    /// The record id, if it can name a record.
    pub fn record(&self) -> Option<i64> {
        match self {
            SentId::Record(id) => Some(*id),
            SentId::NoRecord(_) => None,
        }
    }
}

impl std::fmt::Display for SentId {
    /// The id as it was sent (`AsSent`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SentId::Record(id) => write!(f, "{id}"),
            SentId::NoRecord(text) => AsSent(text).fmt(f),
        }
    }
}

/// Text sent where an id belongs, as a rule's message shows it: as sent, or quoted and
/// escaped (`""`, `" 7"`) when it is empty or holds a space or a control character, so a
/// message never shows an id that is not there ("no family  in this workspace").
pub(crate) struct AsSent<'a>(pub &'a str);

impl std::fmt::Display for AsSent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0;
        if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            write!(f, "{text:?}")
        } else {
            f.write_str(text)
        }
    }
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

    #[test]
    fn a_sent_id_shows_as_sent_and_compares_as_its_text() {
        for text in ["7", "07", "9223372036854775808", "abc", "-7"] {
            assert_eq!(SentId::parse(text.to_owned()).to_string(), text);
        }
        // Quoted where the bare text would not show what was sent.
        for (text, shown) in [("", r#""""#), (" 7", r#"" 7""#), ("7\n", r#""7\n""#), ("a\u{0}", r#""a\0""#)] {
            assert_eq!(SentId::parse(text.to_owned()).to_string(), shown, "{text:?}");
        }
        assert_eq!(SentId::parse("7".to_owned()), SentId::Record(7));
        assert_eq!(SentId::parse("7".to_owned()).record(), Some(7));
        assert_eq!(SentId::parse("07".to_owned()).record(), None);
        assert_ne!(SentId::parse("07".to_owned()), SentId::parse("7".to_owned()));
        assert_eq!(SentId::parse("x".to_owned()), SentId::parse("x".to_owned()));
    }
}
