//! placeholder until the downgrade module lands.
/// Placeholder.
pub fn downgrade_to_30(doc: &serde_json::Value) -> serde_json::Value {
    doc.clone()
}
