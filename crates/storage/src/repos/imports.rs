//! Assistant imports: replacing the takeoff-to-area mappings of an import (`replaceTakeoffMappings`).
//!
//! Rules, in order (the first failing one answers, nothing changes on any of them):
//! 1. not found unless the import is in the path's workspace;
//! 2. 409 `import_kind_mismatch` unless its kind is `takeoff`;
//! 3. 409 `import_not_editable` unless its status is `review`;
//! 4. 422 `project_mismatch` (`/projectId`) if `projectId` is not its target project;
//! 5. 422 `duplicate_source_key` (`/areaMappings/N/sourceKey`) for every mapping whose
//!    `sourceKey` an earlier mapping already uses;
//! 6. 409 `version_conflict` for any `expectedVersion` other than the current version
//!    (0, negatives and huge values included), carrying `currentVersion` and `current`
//!    (the import as a 200 shows it).
//!
//! Success replaces the takeoff: the analysed `sourceKeys` are kept, `groupingLevel` and
//! `areaMappings` come from the request; `version` rises by 1, `updatedAt` is now, and the
//! issue counts, issue summary and `publishable` are recomputed with
//! `crate::repos::takeoff::issue_counts` against the target project's areas. The version check
//! and the write are one `UPDATE … WHERE id = ? AND version = ?` inside the transaction.

use crate::clock::{format_millis, now_millis};
use crate::db_write;
use crate::engine::DbConn;
use crate::engine::Write;
use crate::error::{Refusal, RuleViolation, StateConflict, StoreError, VersionConflict};
use crate::ids::{self, SentId};
use crate::models;
use crate::repos::takeoff::issue_counts;
use crate::schema::{assistant_imports, project_areas};
use crate::stored::{decode, enum_value};
use diesel::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use wpds_contract::types::{
    AssistantImport, AssistantImportCounts, AssistantImportIssueSummary, AssistantImportKind,
    AssistantImportStatus, AssistantImportTarget,
    ReplaceTakeoffMappingsRequestGroupingLevel as GroupingLevel, TakeoffAreaMapping,
};

/// An import's new takeoff mappings and the version the client saw.
#[derive(Debug, Clone, PartialEq)]
pub struct TakeoffMappingsChange {
    /// The project the client takes to be the import's target.
    pub project_id: SentId,
    /// The import's version the client saw.
    pub expected_version: i64,
    /// How the takeoff groups.
    pub grouping_level: GroupingLevel,
    /// The new mappings, stored as they are.
    pub area_mappings: Vec<TakeoffAreaMapping>,
}

impl models::AssistantImportRow {
    /// The import as the contract shows it.
    fn into_import(self) -> Result<AssistantImport, StoreError> {
        let id = self.id;
        let bad = |what: &str, e: serde_json::Error| {
            StoreError::Internal(format!("assistant import {id}: bad stored {what}: {e}"))
        };
        let parse = |what: &str, text: &str| serde_json::from_str::<Value>(text).map_err(|e| bad(what, e));
        let object = |what: &str, text: &str| -> Result<Map<String, Value>, StoreError> {
            match parse(what, text)? {
                Value::Object(map) => Ok(map),
                other => Err(StoreError::Internal(format!(
                    "assistant import {id}: stored {what} is not an object: {other}"
                ))),
            }
        };
        Ok(AssistantImport {
            id: ids::show(id),
            target: AssistantImportTarget {
                kind: self.target_kind,
                project_id: ids::show(self.target_project_id),
            },
            status: enum_value(
                "assistant import",
                id,
                "status",
                &self.status,
                AssistantImportStatus::from_wire,
            )?,
            kind: enum_value("assistant import", id, "kind", &self.kind, AssistantImportKind::from_wire)?,
            version: self.version,
            analysis_revision: self.analysis_revision,
            conversation: decode(
                "assistant import",
                id,
                "conversation",
                parse("conversation", &self.conversation)?,
            )?,
            document: decode("assistant import", id, "document", parse("document", &self.document)?)?,
            progress: decode("assistant import", id, "progress", parse("progress", &self.progress)?)?,
            counts: AssistantImportCounts {
                blocking_issues: self.blocking_issues,
                warning_issues: self.warning_issues,
            },
            issue_summary: AssistantImportIssueSummary {
                blocking: self.blocking_issues,
                warning: self.warning_issues,
            },
            publishable: self.publishable,
            created_at: format_millis(self.created_at),
            updated_at: format_millis(self.updated_at),
            takeoff: object("takeoff", &self.takeoff)?,
            source_selection: object("sourceSelection", &self.source_selection)?,
            column_mappings: object("columnMappings", &self.column_mappings)?,
            value_mappings: object("valueMappings", &self.value_mappings)?,
            review_draft: object("reviewDraft", &self.review_draft)?,
            publish_result: object("publishResult", &self.publish_result)?,
            source_snapshot: object("sourceSnapshot", &self.source_snapshot)?,
        })
    }
}

/// A `409` state conflict without a `current` body.
fn state_conflict(refusal: Refusal, detail: String) -> StoreError {
    StoreError::State(Box::new(StateConflict { refusal, detail, current: None, violations: Vec::new() }))
}

/// `version_conflict` carrying `row` as a 200 would show it.
fn version_conflict(row: models::AssistantImportRow, expected_version: i64) -> StoreError {
    let current_version = row.version;
    let current = match row
        .into_import()
        .and_then(|import| serde_json::to_value(import).map_err(|e| StoreError::Internal(e.to_string())))
    {
        Ok(current) => current,
        Err(e) => return e,
    };
    StoreError::VersionConflict(Box::new(VersionConflict {
        detail: format!("The import is at version {current_version}, not {expected_version}."),
        current_version: Some(current_version),
        current_revision: None,
        current: Some(current),
        conflicts: None,
    }))
}

/// Every mapping whose `sourceKey` an earlier mapping already uses, pointing at the later one.
fn duplicate_source_keys(change: &TakeoffMappingsChange) -> Vec<RuleViolation> {
    let mut first_at: HashMap<&str, usize> = HashMap::new();
    let mut duplicates = Vec::new();
    for (i, mapping) in change.area_mappings.iter().enumerate() {
        match first_at.get(mapping.source_key.as_str()) {
            Some(first) => duplicates.push(RuleViolation::new(
                "duplicate_source_key",
                format!("/areaMappings/{i}/sourceKey"),
                format!("sourceKey {:?} is already mapped by /areaMappings/{first}", mapping.source_key),
            )),
            None => {
                first_at.insert(&mapping.source_key, i);
            }
        }
    }
    duplicates
}

/// Replaces the takeoff mappings of import `import_id` of `workspace_id` (see the module
/// documentation for the rules and their order).
pub fn replace_takeoff(
    workspace_id: i64,
    import_id: i64,
    change: TakeoffMappingsChange,
) -> Write<AssistantImport> {
    Write::new("SELECT assistant_imports project_areas UPDATE assistant_imports", move |conn| {
        replace_takeoff_on(conn, workspace_id, import_id, change)
    })
}

/// [`replace_takeoff`] on `conn`.
fn replace_takeoff_on(
    conn: &mut DbConn,
    workspace_id: i64,
    import_id: i64,
    change: TakeoffMappingsChange,
) -> Result<AssistantImport, StoreError> {
    let expected_version = change.expected_version;
    db_write!(conn => {
        let row: models::AssistantImportRow = assistant_imports::table
            .filter(assistant_imports::id.eq(import_id))
            .filter(assistant_imports::workspace_id.eq(workspace_id))
            .select(models::AssistantImportRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| StoreError::NotFound(format!("assistant import {import_id}")))?;
        if row.kind != AssistantImportKind::Takeoff.as_str() {
            return Err(state_conflict(
                Refusal::ImportKindMismatch,
                format!("Import {import_id} is of kind {}; only a takeoff import has takeoff mappings.", row.kind),
            ));
        }
        if row.status != AssistantImportStatus::Review.as_str() {
            return Err(state_conflict(
                Refusal::ImportNotEditable,
                format!("The import is {}; only an import in review can be edited.", row.status),
            ));
        }
        if change.project_id.record() != Some(row.target_project_id) {
            return Err(StoreError::rule(
                "project_mismatch",
                "/projectId",
                format!(
                    "project {} is not the import's target project {}",
                    change.project_id,
                    ids::show(row.target_project_id)
                ),
            ));
        }
        let duplicates = duplicate_source_keys(&change);
        if !duplicates.is_empty() {
            return Err(StoreError::Rule(duplicates));
        }
        if row.version != expected_version {
            return Err(version_conflict(row, expected_version));
        }

        let stored: Value = serde_json::from_str(&row.takeoff)
            .map_err(|e| StoreError::Internal(format!("assistant import {import_id}: bad stored takeoff: {e}")))?;
        let source_keys = stored.get("sourceKeys").cloned().unwrap_or_else(|| json!([]));
        let area_mappings = serde_json::to_value(&change.area_mappings)
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        let takeoff = json!({
            "groupingLevel": change.grouping_level.as_str(),
            "sourceKeys": source_keys,
            "areaMappings": area_mappings,
        });
        let areas: HashSet<String> = project_areas::table
            .filter(project_areas::project_id.eq(row.target_project_id))
            .select(project_areas::id)
            .load::<i64>(conn)?
            .into_iter()
            .map(ids::show)
            .collect();
        let counts = issue_counts(&takeoff, &areas);

        let updated: Option<models::AssistantImportRow> = diesel::update(
            assistant_imports::table
                .filter(assistant_imports::id.eq(import_id))
                .filter(assistant_imports::version.eq(expected_version))
                .filter(assistant_imports::kind.eq(AssistantImportKind::Takeoff.as_str()))
                .filter(assistant_imports::status.eq(AssistantImportStatus::Review.as_str())),
        )
        .set((
            assistant_imports::takeoff.eq(takeoff.to_string()),
            assistant_imports::blocking_issues.eq(counts.blocking),
            assistant_imports::warning_issues.eq(counts.warning),
            assistant_imports::publishable.eq(counts.publishable()),
            assistant_imports::version.eq(assistant_imports::version + 1),
            assistant_imports::updated_at.eq(now_millis()),
        ))
        .returning(models::AssistantImportRow::as_returning())
        .get_result(conn)
        .optional()?;
        match updated {
            Some(row) => row.into_import(),
            None => {
                // Changed since it was read (possible on PostgreSQL): answer with it as it is now.
                let current: Option<models::AssistantImportRow> = assistant_imports::table
                    .filter(assistant_imports::id.eq(import_id))
                    .select(models::AssistantImportRow::as_select())
                    .first(conn)
                    .optional()?;
                match current {
                    Some(current) if current.kind != AssistantImportKind::Takeoff.as_str() => Err(state_conflict(
                        Refusal::ImportKindMismatch,
                        format!("Import {import_id} is of kind {}; only a takeoff import has takeoff mappings.", current.kind),
                    )),
                    Some(current) if current.status != AssistantImportStatus::Review.as_str() => Err(state_conflict(
                        Refusal::ImportNotEditable,
                        format!("The import is {}; only an import in review can be edited.", current.status),
                    )),
                    Some(current) => Err(version_conflict(current, expected_version)),
                    None => Err(StoreError::NotFound(format!("assistant import {import_id}"))),
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_later_duplicate_source_key_is_named() {
        let mapping = |key: &str| TakeoffAreaMapping {
            source_key: key.to_owned(),
            area_id: "301".to_owned(),
            excluded: false,
        };
        let change = TakeoffMappingsChange {
            project_id: SentId::Record(7),
            expected_version: 5,
            grouping_level: GroupingLevel::Total,
            area_mappings: vec![mapping("a"), mapping("b"), mapping("a"), mapping("A"), mapping("a")],
        };
        let pointers: Vec<String> = duplicate_source_keys(&change).into_iter().map(|v| v.pointer).collect();
        assert_eq!(pointers, ["/areaMappings/2/sourceKey", "/areaMappings/4/sourceKey"]);
    }
}
