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
    impl serde::de::Visitor<'_> for Visitor {
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
    }
    deserializer.deserialize_any(Visitor)
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
