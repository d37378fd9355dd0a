//! Parsing request bodies strictly: standard JSON, but an object with the same key twice is
//! refused instead of silently keeping the last value, so an ambiguous body is a clear 400.
//! serde_json's recursion limit still applies, so deeply nested input is refused too.
//!
//! Numbers are kept exactly as written (serde_json's `arbitrary_precision`, which hands a
//! number to a visitor as a one-entry map under a private key): the validator then decides
//! integer-ness on the decimal text, not on a rounded float.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// The key under which serde_json (`arbitrary_precision`) presents a number's exact text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A JSON value read with duplicate keys refused.
struct StrictValue(Value);

/// Parses `bytes` as JSON, refusing duplicate object keys.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<StrictValue>(bytes).map(|v| v.0)
}

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == NUMBER_TOKEN && object.is_empty() {
                let text: String = map.next_value()?;
                let number: Number = text.parse().map_err(de::Error::custom)?;
                return Ok(Value::Number(number));
            }
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let StrictValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_like_serde_json() {
        let text = br#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": 18446744073709551615}"#;
        assert_eq!(parse(text).unwrap(), serde_json::from_slice::<Value>(text).unwrap());
    }

    #[test]
    fn keeps_numbers_exactly_as_written() {
        let value = parse(br#"{"a": 2.0000000000000000000001, "b": 20e-1, "c": 7}"#).unwrap();
        assert_eq!(value["a"].to_string(), "2.0000000000000000000001");
        assert_eq!(value["b"].to_string(), "20e-1");
        assert_eq!(value["c"].as_i64(), Some(7));
    }

    #[test]
    fn refuses_duplicate_keys_at_any_depth() {
        assert!(parse(br#"{"a": 1, "a": 2}"#).unwrap_err().to_string().contains("duplicate key \"a\""));
        assert!(parse(br#"{"x": [{"b": 1, "b": 1}]}"#).is_err());
        assert!(parse(br#"{"a": 1, "b": {"a": 2}}"#).is_ok(), "the same key in different objects is fine");
    }

    #[test]
    fn refuses_deep_nesting_and_invalid_utf8() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(deep.as_bytes()).is_err());
        assert!(parse(&[b'"', 0xff, b'"']).is_err());
    }
}
