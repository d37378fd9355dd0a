//! Reading stored wire values back into contract types.

use crate::error::StoreError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads an enum's stored text back into its contract type with the enum's own
/// `from_wire`. A stored value that is none of its values is a defect of the data, not of
/// the request: it is `Internal`, naming the record (`record` `id`) and the field (`what`).
pub(crate) fn enum_value<T>(
    record: &str,
    id: i64,
    what: &str,
    text: &str,
    from_wire: fn(&str) -> Option<T>,
) -> Result<T, StoreError> {
    from_wire(text).ok_or_else(|| StoreError::Internal(format!("{record} {id}: bad stored {what}: {text:?}")))
}

/// Reads `value` as stored (a JSON list or object) into its contract type.
/// A stored value that does not fit is a defect of the data, not of the request: it is
/// `Internal`, naming the record (`record` `id`) and the field (`what`) for the log.
pub(crate) fn decode<T: DeserializeOwned>(
    record: &str,
    id: i64,
    what: &str,
    value: Value,
) -> Result<T, StoreError> {
    serde_json::from_value(value)
        .map_err(|e| StoreError::Internal(format!("{record} {id}: bad stored {what}: {e}")))
}
