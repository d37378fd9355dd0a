//! Cross-project report exports (`createCrossProjectReportExport`).
//!
//! `requestId` is an idempotency key per workspace, compared case-insensitively: it is
//! kept lower-case in `report_exports.request_key` (unique per workspace) for as long as
//! the export exists. The request is kept as canonical JSON (object keys sorted, the key
//! lower-cased) and the 201 body exactly as it was answered.
//!
//! Rules, in order:
//! 1. the key is already stored: the same body (compared as parsed JSON) replays the stored
//!    201 body and creates nothing; another body is 422 `idempotency_key_reused`;
//! 2. 422 `invalid_scope`: mode `fixed` needs one or more `projectIds`, mode `all` takes
//!    none (an empty list counts as none);
//! 3. 422 `unknown_project` for every `projectIds` entry that is not a project of the
//!    workspace.
//!
//! Only a 201 is stored, so a corrected retry with the key of a refused request works.
//! Concurrent identical requests create exactly one record: the insert is
//! `INSERT … ON CONFLICT (workspace_id, request_key) DO NOTHING RETURNING id` inside the
//! write transaction (SQLite: `BEGIN IMMEDIATE` serialises writers; PostgreSQL: the
//! conflicting insert waits for the first inserter to commit), and a request whose insert
//! found the key taken reads the stored row and compares bodies like rule 1.

use crate::clock::{format_millis, now_millis};
use crate::db_write;
use crate::defects::{self, Defect};
use crate::engine::DbConn;
use crate::engine::Write;
use crate::error::{RuleViolation, StoreError};
use crate::ids;
use crate::schema::{projects, report_exports};
use diesel::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use wpds_contract::types::{ExportConfiguration, ExportProjectScopeMode, ExportRecord, ExportRecordStatus};

/// An export to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewExport {
    /// The workspace of the path.
    pub workspace_id: i64,
    /// The caller, recorded as `createdBy`.
    pub user_id: i64,
    /// The idempotency key as sent (compared case-insensitively).
    pub request_id: String,
    /// The export's name.
    pub name: String,
    /// What the report holds and how it is laid out, stored and answered as it is.
    pub configuration: ExportConfiguration,
}

/// The answer to a create request.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedExport {
    /// The export record: new, or the stored 201 body of the earlier identical request.
    pub record: ExportRecord,
    /// Whether `record` replays an earlier request (answered with `Idempotent-Replayed`).
    pub replayed: bool,
}

/// `value` with the keys of every object sorted, so equal JSON has equal text.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, canonical(v))).collect::<Map<_, _>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// The request as compared and stored: its body (`requestId`, `name`, `configuration`) as
/// canonical JSON with the key lower-cased.
fn request_fingerprint(new: &NewExport, configuration: Value) -> Value {
    canonical(json!({
        "requestId": new.request_id.to_ascii_lowercase(),
        "name": new.name,
        "configuration": configuration,
    }))
}

/// The scope and project rules (2 and 3) for `configuration` in a workspace holding `known`.
fn check_rules(configuration: &ExportConfiguration, known: &HashSet<i64>) -> Result<(), StoreError> {
    const SCOPE: &str = "/configuration/projectScope";
    let scope = &configuration.project_scope;
    match (scope.mode, scope.project_ids.as_deref()) {
        (ExportProjectScopeMode::Fixed, None) => {
            return Err(StoreError::rule("invalid_scope", SCOPE, "mode fixed needs one or more projectIds"));
        }
        (ExportProjectScopeMode::Fixed, Some([])) => {
            return Err(StoreError::rule(
                "invalid_scope",
                format!("{SCOPE}/projectIds"),
                "mode fixed needs one or more projectIds",
            ));
        }
        (ExportProjectScopeMode::All, Some([_, ..])) => {
            return Err(StoreError::rule(
                "invalid_scope",
                format!("{SCOPE}/projectIds"),
                "mode all takes no projectIds",
            ));
        }
        // An empty list names no project, so `all` with `[]` is `all` (SDKs send empty lists).
        (ExportProjectScopeMode::Fixed, Some(_)) | (ExportProjectScopeMode::All, None | Some([])) => {}
    }
    let unknown: Vec<RuleViolation> = scope
        .project_ids
        .iter()
        .flatten()
        .enumerate()
        .filter(|(_, id)| !ids::parse(id).is_some_and(|id| known.contains(&id)))
        .map(|(i, id)| {
            RuleViolation::new(
                "unknown_project",
                format!("{SCOPE}/projectIds/{i}"),
                format!("project {} is not in this workspace", ids::AsSent(id)),
            )
        })
        .collect();
    if unknown.is_empty() { Ok(()) } else { Err(StoreError::Rule(unknown)) }
}

/// The stored answer for a key already taken: a replay when `fingerprint` is the stored
/// request, otherwise `idempotency_key_reused`.
fn replay(
    stored_request: &str,
    stored_response: &str,
    fingerprint: &Value,
    sent_key: &str,
) -> Result<CreatedExport, StoreError> {
    let stored_request: Value = serde_json::from_str(stored_request)
        .map_err(|e| StoreError::Internal(format!("export {sent_key}: bad stored request: {e}")))?;
    if &stored_request != fingerprint {
        return Err(StoreError::IdempotencyKeyReused(sent_key.to_owned()));
    }
    let record: ExportRecord = serde_json::from_str(stored_response)
        .map_err(|e| StoreError::Internal(format!("export {sent_key}: bad stored response: {e}")))?;
    Ok(CreatedExport { record, replayed: true })
}

/// Creates an export, or replays the one created earlier by the same request.
///
/// Rules, in order: 422 `idempotency_key_reused`, 422 `invalid_scope`, 422
/// `unknown_project` (see the module documentation).
pub fn create(new: NewExport) -> Write<CreatedExport> {
    Write::new("SELECT report_exports projects INSERT report_exports UPDATE report_exports", move |conn| {
        create_on(conn, new)
    })
}

/// [`create`] on `conn`.
fn create_on(conn: &mut DbConn, new: NewExport) -> Result<CreatedExport, StoreError> {
    let workspace_id = new.workspace_id;
    let user_id = new.user_id;
    let key = new.request_id.to_ascii_lowercase();
    let configuration = match serde_json::to_value(&new.configuration) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(StoreError::Internal(format!("an export configuration serialised as {other}")));
        }
        Err(e) => return Err(StoreError::Internal(format!("cannot serialise an export configuration: {e}"))),
    };
    let fingerprint = request_fingerprint(&new, Value::Object(configuration.clone()));
    let request_text = fingerprint.to_string();
    let configuration_text = Value::Object(configuration.clone()).to_string();
    // Seeded (`defects`): the key looked up is never the one stored, and each request stores
    // its own.
    let (looked_up, stored_as) = if defects::on(Defect::DuplicateExport) {
        (format!("{key}-never"), format!("{key}-{}", now_millis()))
    } else {
        (key.clone(), key.clone())
    };
    db_write!(conn => {
        let stored = |conn: &mut _| {
            report_exports::table
                .filter(report_exports::workspace_id.eq(workspace_id))
                .filter(report_exports::request_key.eq(&looked_up))
                .select((report_exports::request_body, report_exports::response_body))
                .first::<(String, String)>(conn)
                .optional()
        };
        if let Some((stored_request, stored_response)) = stored(conn)? {
            return replay(&stored_request, &stored_response, &fingerprint, &new.request_id);
        }

        let known: HashSet<i64> = projects::table
            .filter(projects::workspace_id.eq(workspace_id))
            .select(projects::id)
            .load::<i64>(conn)?
            .into_iter()
            .collect();
        check_rules(&new.configuration, &known)?;

        let now = now_millis();
        let inserted: Option<i64> = diesel::insert_into(report_exports::table)
            .values((
                report_exports::workspace_id.eq(workspace_id),
                report_exports::request_key.eq(&stored_as),
                report_exports::request_body.eq(&request_text),
                report_exports::response_body.eq(""),
                report_exports::name.eq(&new.name),
                report_exports::status.eq(ExportRecordStatus::Queued.as_str()),
                report_exports::configuration.eq(&configuration_text),
                report_exports::created_by.eq(user_id),
                report_exports::created_at.eq(now),
                report_exports::updated_at.eq(now),
            ))
            .on_conflict((report_exports::workspace_id, report_exports::request_key))
            .do_nothing()
            .returning(report_exports::id)
            .get_result(conn)
            .optional()?;
        let Some(id) = inserted else {
            // Another request with this key committed after our first look.
            let (stored_request, stored_response) = stored(conn)?.ok_or_else(|| {
                StoreError::Internal(format!("export key {key} is taken but not readable"))
            })?;
            return replay(&stored_request, &stored_response, &fingerprint, &new.request_id);
        };

        let record = ExportRecord {
            id: ids::show(id),
            request_id: new.request_id.clone(),
            name: new.name.clone(),
            status: ExportRecordStatus::Queued,
            configuration: configuration.clone(),
            created_by: ids::show(user_id),
            created_at: format_millis(now),
            updated_at: format_millis(now),
        };
        let response_text = serde_json::to_string(&record)
            .map_err(|e| StoreError::Internal(format!("cannot serialise export {id}: {e}")))?;
        diesel::update(report_exports::table.filter(report_exports::id.eq(id)))
            .set(report_exports::response_body.eq(&response_text))
            .execute(conn)?;
        Ok(CreatedExport { record, replayed: false })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a = canonical(json!({"b": 1, "a": {"d": [ {"y": 1, "x": 2} ], "c": 3}}));
        let b = canonical(json!({"a": {"c": 3, "d": [ {"x": 2, "y": 1} ]}, "b": 1}));
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.to_string(), r#"{"a":{"c":3,"d":[{"x":2,"y":1}]},"b":1}"#);
    }
}
