//! Takeoff issue rules of assistant imports, shared by the seed loader and `replaceTakeoffMappings`.
//!
//! A takeoff is `{groupingLevel, sourceKeys: [...], areaMappings: [{sourceKey, areaId,
//! excluded}]}`: `sourceKeys` are the groups the analysis found. A mapping that is not
//! excluded and names an area the project lacks is blocking; a source key left unmapped is
//! a warning; an import is publishable iff it has no blocking issue.

use serde_json::Value;
use std::collections::HashSet;

/// Blocking and warning issue counts of an import's takeoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IssueCounts {
    /// Mappings to areas the project lacks.
    pub blocking: i64,
    /// Analysed source keys left unmapped.
    pub warning: i64,
}

impl IssueCounts {
    /// Whether the import may be published.
    pub fn publishable(self) -> bool {
        self.blocking == 0
    }
}

/// Counts the issues of `takeoff` for a project whose areas are `project_area_ids`.
pub fn issue_counts(takeoff: &Value, project_area_ids: &HashSet<String>) -> IssueCounts {
    let mappings =
        takeoff.get("areaMappings").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let blocking = mappings
        .iter()
        .filter(|m| !m.get("excluded").and_then(Value::as_bool).unwrap_or(false))
        .filter(|m| {
            m.get("areaId").and_then(Value::as_str).is_none_or(|area| !project_area_ids.contains(area))
        })
        .count() as i64;
    let mapped: HashSet<&str> =
        mappings.iter().filter_map(|m| m.get("sourceKey").and_then(Value::as_str)).collect();
    let warning = takeoff
        .get("sourceKeys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).filter(|k| !mapped.contains(k)).count() as i64)
        .unwrap_or(0);
    IssueCounts { blocking, warning }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_unknown_areas_as_blocking_and_unmapped_keys_as_warnings() {
        let areas: HashSet<String> = ["301".to_owned()].into();
        let takeoff = json!({
            "sourceKeys": ["a", "b", "c"],
            "areaMappings": [
                {"sourceKey": "a", "areaId": "301", "excluded": false},
                {"sourceKey": "b", "areaId": "999", "excluded": false},
                {"sourceKey": "x", "areaId": "999", "excluded": true}
            ]
        });
        let counts = issue_counts(&takeoff, &areas);
        assert_eq!(counts, IssueCounts { blocking: 1, warning: 1 });
        assert!(!counts.publishable());
        assert!(issue_counts(&json!({}), &areas).publishable());
    }
}
