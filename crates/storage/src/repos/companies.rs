//! Global companies of the platform-wide directory: retiring one (`retireGlobalCompany`), and
//! reading the audit log that administrative operations write.
//!
//! Rules, in order: not found for an unknown company; 409 `already_retired` if it was
//! retired before (the conflict's `current` is the company as a 201 shows it). Otherwise
//! `retired_at` is set to now exactly once — `UPDATE … WHERE id = ? AND retired_at IS
//! NULL`, rowcount-checked, so of two concurrent retires one succeeds and the other is
//! `already_retired` — and an audit entry (`retire_global_company`,
//! `global_company:<id>`, the reason, the caller) is written in the same transaction.

use crate::clock::{format_millis, now_millis};
use crate::db_write;
use crate::engine::DbConn;
#[cfg(feature = "test-support")]
use crate::engine::Read;
use crate::engine::Write;
use crate::error::{Refusal, StateConflict, StoreError};
use crate::ids;
use crate::models;
use crate::repos::auth::{AuditEntry, AuditLog};
use crate::schema::global_companies;
use diesel::prelude::*;
use serde_json::json;
use wpds_contract::types::GlobalCompany;

impl models::GlobalCompanyRow {
    /// The company as the contract shows it (`retiredAt` `""` while not retired).
    fn into_company(self) -> Result<GlobalCompany, StoreError> {
        let id = self.id;
        let list = |what: &str, text: &str| -> Result<Vec<String>, StoreError> {
            serde_json::from_str(text)
                .map_err(|e| StoreError::Internal(format!("global company {id}: bad stored {what}: {e}")))
        };
        Ok(GlobalCompany {
            id: ids::show(id),
            aliases: list("aliases", &self.aliases)?,
            domains: list("domains", &self.domains)?,
            name: self.name,
            primary_type: self.primary_type,
            legal_name: self.legal_name,
            country: self.country,
            retired_at: self.retired_at.map(format_millis).unwrap_or_default(),
        })
    }
}

/// `already_retired`, carrying the company as a 201 shows it.
fn already_retired(row: models::GlobalCompanyRow) -> StoreError {
    let company = match row.into_company() {
        Ok(company) => company,
        Err(e) => return e,
    };
    let detail = format!("Company {} was retired at {}.", company.id, company.retired_at);
    match serde_json::to_value(&company) {
        Ok(current) => StoreError::State(Box::new(StateConflict {
            refusal: Refusal::AlreadyRetired,
            detail,
            current: Some(current),
            violations: Vec::new(),
        })),
        Err(e) => StoreError::Internal(e.to_string()),
    }
}

/// Retires global company `company_id` on behalf of `actor_user_id`, for `reason` (see the
/// module documentation for the rules).
pub fn retire(company_id: i64, actor_user_id: i64, reason: String) -> Write<GlobalCompany> {
    Write::new("SELECT global_companies UPDATE global_companies INSERT audit_log", move |conn| {
        retire_on(conn, company_id, actor_user_id, &reason)
    })
}

/// [`retire`] on `conn`.
fn retire_on(
    conn: &mut DbConn,
    company_id: i64,
    actor_user_id: i64,
    reason: &str,
) -> Result<GlobalCompany, StoreError> {
    let outcome = db_write!(conn => {
        let company = global_companies::table.filter(global_companies::id.eq(company_id));
        let row: models::GlobalCompanyRow = company
            .select(models::GlobalCompanyRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| StoreError::NotFound(format!("global company {company_id}")))?;
        if row.retired_at.is_some() {
            return Err(already_retired(row));
        }
        let updated: Option<models::GlobalCompanyRow> = diesel::update(company.filter(global_companies::retired_at.is_null()))
            .set(global_companies::retired_at.eq(now_millis()))
            .returning(models::GlobalCompanyRow::as_returning())
            .get_result(conn)
            .optional()?;
        let Some(row) = updated else {
            // Retired by a concurrent call since it was read (possible on PostgreSQL).
            let row: models::GlobalCompanyRow = company.select(models::GlobalCompanyRow::as_select()).first(conn)?;
            return Err(already_retired(row));
        };
        let retired = row.into_company()?;
        conn.record_audit(&AuditEntry {
            actor_user_id,
            action: "retire_global_company",
            target: format!("global_company:{company_id}"),
            reason,
            detail: json!({ "retiredAt": retired.retired_at }),
        })?;
        Ok(retired)
    });
    if let Err(error) = &outcome {
        let entry = AuditEntry {
            actor_user_id,
            action: "retire_global_company",
            target: format!("global_company:{company_id}"),
            reason,
            detail: serde_json::Value::Null,
        };
        crate::repos::auth::record_refused(conn, entry, error)?;
    }
    outcome
}

/// One entry of the audit log, as stored.
#[cfg(feature = "test-support")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Who acted.
    pub actor_user_id: i64,
    /// What was done (`retire_global_company`, …).
    pub action: String,
    /// What it was done to (`global_company:204`).
    pub target: String,
    /// The reason given.
    pub reason: String,
    /// Anything else kept, as JSON.
    pub detail: serde_json::Value,
    /// When (ms since the epoch).
    pub created_at: i64,
}

/// Every audit entry about `target`, oldest first (for tests: the API reads no audit entry).
#[cfg(feature = "test-support")]
pub fn audit_entries_for(target: String) -> Read<Vec<AuditRecord>> {
    use crate::db_run;
    use crate::schema::audit_log;
    use serde_json::Value;
    Read::new("SELECT audit_log", move |conn| {
        let rows: Vec<(i64, String, String, String, String, i64)> = db_run!(conn => audit_log::table
            .filter(audit_log::target.eq(&target))
            .order(audit_log::id.asc())
            .select((
                audit_log::actor_user_id,
                audit_log::action,
                audit_log::target,
                audit_log::reason,
                audit_log::detail,
                audit_log::created_at,
            ))
            .load(conn))?;
        Ok(rows
            .into_iter()
            .map(|(actor_user_id, action, target, reason, detail, created_at)| AuditRecord {
                actor_user_id,
                action,
                target,
                reason,
                detail: serde_json::from_str(&detail).unwrap_or(Value::String(detail)),
                created_at,
            })
            .collect())
    })
}
