//! Serde helpers the generated types use for wire forms Rust types cannot express.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Deserialises any JSON integer into an `i64`, saturating at the type's bounds.
///
/// The schema (already checked by the validator) decides which integers are acceptable:
/// every integer property carries an integer format (`int64`, or `int32`), so a value beyond
/// the 64-bit range (such as
/// `-1e30`) is refused with 400 before it gets here. What arrives may still be spelled as a
/// float (`7.0`, `1e3`), which JSON Schema counts as an integer; saturation only guards a
/// schema that would drop the format. Non-integral numbers are refused.
pub fn saturating_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = i64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an integer")
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i64, E> {
            Ok(v)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i64, E> {
            Ok(i64::try_from(v).unwrap_or(i64::MAX))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<i64, E> {
            if v.is_finite() && v.fract() == 0.0 {
                // `as` saturates for floats beyond the range.
                Ok(v as i64)
            } else {
                Err(E::custom(format!("{v} is not an integer")))
            }
        }
        /// A number serde_json keeps as its exact text (`2e0`, `20e-1`): see
        /// [`exact_integer`].
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<i64, A::Error> {
            let text = match map.next_entry::<String, String>()? {
                Some((_, text)) => text,
                None => return Err(serde::de::Error::custom("an empty object is not an integer")),
            };
            exact_integer(&text).ok_or_else(|| serde::de::Error::custom(format!("{text} is not an integer")))
        }
    }
    deserializer.deserialize_any(Visitor)
}

/// The integer a JSON number's text denotes exactly (`2.0`, `2e0`, `20e-1` → 2), saturated
/// at the 64-bit bounds; `None` when it has a non-zero fraction or is not a number.
pub fn exact_integer(text: &str) -> Option<i64> {
    let saturated = if text.starts_with('-') { i64::MIN } else { i64::MAX };
    integer_value(text).map(|value| value.and_then(|v| i64::try_from(v).ok()).unwrap_or(saturated))
}

/// The integer a JSON number's text denotes exactly: `None` when it is not an integer (a
/// non-zero fraction, however small, or not a number at all), `Some(None)` when it is one
/// beyond the 128-bit range.
pub fn integer_value(text: &str) -> Option<Option<i128>> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.strip_prefix('+').unwrap_or(e).parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The value is digits × 10^(exponent − fraction length); the digits' trailing zeros
    // move into the power of ten.
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches('0').trim_end_matches('0');
    if significant.is_empty() {
        return Some(Some(0));
    }
    let trailing_zeros = digits.len() - digits.trim_end_matches('0').len();
    let power = exponent.checked_sub(fraction.len() as i64)?.checked_add(trailing_zeros as i64)?;
    if power < 0 {
        return None;
    }
    if power as usize + significant.len() > 38 {
        return Some(None);
    }
    let magnitude: i128 = format!("{significant}{}", "0".repeat(power as usize)).parse().ok()?;
    Some(Some(if negative { -magnitude } else { magnitude }))
}

/// [`saturating_i64`] for an optional property.
pub fn saturating_i64_opt<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    saturating_i64(deserializer).map(Some)
}

/// An optional, nullable property: `None` is absent, `Some(None)` is `null`.
///
/// Used with `#[serde(default, skip_serializing_if = "Option::is_none", with = …)]`.
pub mod double_option {
    use super::*;

    /// Writes `Some(None)` as `null` and `Some(Some(v))` as `v`.
    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<Option<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Reads a present property (even `null`) as `Some(_)`.
    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::exact_integer;

    #[test]
    fn reads_integers_however_they_are_spelled() {
        for (text, value) in
            [("2", 2), ("2.0", 2), ("2e0", 2), ("20e-1", 2), ("0.2e1", 2), ("-3.000", -3), ("0e5", 0)]
        {
            assert_eq!(exact_integer(text), Some(value), "{text}");
        }
        assert_eq!(exact_integer("1e30"), Some(i64::MAX));
        assert_eq!(exact_integer("-1e30"), Some(i64::MIN));
        assert_eq!(super::integer_value("1e400"), Some(None));
        assert_eq!(super::integer_value("1E+2"), Some(Some(100)));
    }

    #[test]
    fn refuses_any_fraction_however_small() {
        for text in ["2.0000000000000000000001", "2.5", "25e-1", "1e-400", "x", ""] {
            assert_eq!(exact_integer(text), None, "{text}");
        }
    }
}
