//! Assistant credit allowances: resetting one user's used credits for one cycle of a
//! workspace (`resetAssistantCreditAllowance`).
//!
//! Rules, in order: not found for an unknown workspace; 422 `unknown_user` (`/userId`) if
//! the user is not a member of the workspace. A cycle is a UTC month `YYYY-MM`; `current`
//! means the present one. The reset sets that cycle's used credits to 0 (creating the
//! allowance row if there is none), records the reset (reason, who, when) and writes an
//! audit entry (`reset_assistant_credit_allowance`, `workspace:<w>/user:<u>/cycle:<c>`), all
//! in one transaction. A repeated reset is harmless and recorded again.

use crate::clock::{current_month, now_millis};
use crate::db_write;
use crate::engine::DbConn;
#[cfg(feature = "test-support")]
use crate::engine::Read;
use crate::engine::Write;
use crate::error::StoreError;
use crate::ids::SentId;
use crate::repos::auth::{AuditEntry, AuditLog};
use crate::schema::{credit_allowances, credit_resets, memberships, workspaces};
use diesel::prelude::*;
use serde_json::json;

/// One reset of an allowance, to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCreditReset {
    /// The workspace of the path.
    pub workspace_id: i64,
    /// The user whose allowance is reset.
    pub user_id: SentId,
    /// `current` or `YYYY-MM`, already checked by the contract.
    pub cycle: String,
    /// Why (1 to 2000 characters).
    pub reason: String,
    /// The administrator resetting it.
    pub reset_by: i64,
}

/// One recorded reset.
#[cfg(feature = "test-support")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetRecord {
    /// The cycle reset, `YYYY-MM`.
    pub cycle: String,
    /// The reason given.
    pub reason: String,
    /// Who reset it.
    pub reset_by: i64,
    /// When (ms since the epoch).
    pub created_at: i64,
}

/// The month `cycle` names: `current` is the present UTC month, anything else is taken as
/// the `YYYY-MM` it already is.
pub(crate) fn resolve_cycle(cycle: &str) -> String {
    if cycle == "current" { current_month() } else { cycle.to_owned() }
}

/// Resets the allowance `reset` names (see the module documentation for the rules).
pub fn reset_allowance(reset: NewCreditReset) -> Write<()> {
    Write::new(
        "SELECT workspaces memberships INSERT credit_allowances credit_resets audit_log",
        move |conn| reset_allowance_on(conn, reset),
    )
}

/// [`reset_allowance`] on `conn`.
fn reset_allowance_on(conn: &mut DbConn, reset: NewCreditReset) -> Result<(), StoreError> {
    let cycle = resolve_cycle(&reset.cycle);
    let workspace_id = reset.workspace_id;
    let user = reset.user_id.record();
    let outcome = db_write!(conn => {
        let workspace: i64 = workspaces::table.filter(workspaces::id.eq(workspace_id)).count().get_result(conn)?;
        if workspace == 0 {
            return Err(StoreError::NotFound(format!("workspace {workspace_id}")));
        }
        let member: i64 = match user {
            Some(user_id) => memberships::table
                .filter(memberships::workspace_id.eq(workspace_id))
                .filter(memberships::user_id.eq(user_id))
                .count()
                .get_result(conn)?,
            None => 0,
        };
        let Some(user_id) = user.filter(|_| member > 0) else {
            return Err(StoreError::rule(
                "unknown_user",
                "/userId",
                format!("user {} is not a member of workspace {workspace_id}", reset.user_id),
            ));
        };
        diesel::insert_into(credit_allowances::table)
            .values((
                credit_allowances::workspace_id.eq(workspace_id),
                credit_allowances::user_id.eq(user_id),
                credit_allowances::cycle.eq(&cycle),
                credit_allowances::used_credits.eq(0_i64),
            ))
            .on_conflict((credit_allowances::workspace_id, credit_allowances::user_id, credit_allowances::cycle))
            .do_update()
            .set(credit_allowances::used_credits.eq(0_i64))
            .execute(conn)?;
        diesel::insert_into(credit_resets::table)
            .values((
                credit_resets::workspace_id.eq(workspace_id),
                credit_resets::user_id.eq(user_id),
                credit_resets::cycle.eq(&cycle),
                credit_resets::reason.eq(&reset.reason),
                credit_resets::reset_by.eq(reset.reset_by),
                credit_resets::created_at.eq(now_millis()),
            ))
            .execute(conn)?;
        conn.record_audit(&AuditEntry {
            actor_user_id: reset.reset_by,
            action: "reset_assistant_credit_allowance",
            target: format!("workspace:{workspace_id}/user:{user_id}/cycle:{cycle}"),
            reason: &reset.reason,
            detail: json!({ "cycle": cycle }),
        })?;
        Ok(())
    });
    if let Err(error) = &outcome {
        let entry = AuditEntry {
            actor_user_id: reset.reset_by,
            action: "reset_assistant_credit_allowance",
            target: format!("workspace:{workspace_id}/user:{}/cycle:{cycle}", reset.user_id),
            reason: &reset.reason,
            detail: serde_json::Value::Null,
        };
        crate::repos::auth::record_refused(conn, entry, error)?;
    }
    outcome
}

/// The credits `user_id` has used in `cycle` (`YYYY-MM`) of `workspace_id`, if an allowance
/// row exists (for tests: the API reads no allowance).
#[cfg(feature = "test-support")]
pub fn used_credits(workspace_id: i64, user_id: i64, cycle: String) -> Read<Option<i64>> {
    use crate::db_run;
    Read::new("SELECT credit_allowances", move |conn| {
        Ok(db_run!(conn => credit_allowances::table
            .filter(credit_allowances::workspace_id.eq(workspace_id))
            .filter(credit_allowances::user_id.eq(user_id))
            .filter(credit_allowances::cycle.eq(&cycle))
            .select(credit_allowances::used_credits)
            .first(conn)
            .optional())?)
    })
}

/// Every recorded reset of `user_id`'s allowance in `workspace_id`, oldest first (for tests:
/// the API reads no reset).
#[cfg(feature = "test-support")]
pub fn resets_for(workspace_id: i64, user_id: i64) -> Read<Vec<ResetRecord>> {
    use crate::db_run;
    Read::new("SELECT credit_resets", move |conn| {
        let rows: Vec<(String, String, i64, i64)> = db_run!(conn => credit_resets::table
            .filter(credit_resets::workspace_id.eq(workspace_id))
            .filter(credit_resets::user_id.eq(user_id))
            .order(credit_resets::id.asc())
            .select((credit_resets::cycle, credit_resets::reason, credit_resets::reset_by, credit_resets::created_at))
            .load(conn))?;
        Ok(rows
            .into_iter()
            .map(|(cycle, reason, reset_by, created_at)| ResetRecord { cycle, reason, reset_by, created_at })
            .collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_is_the_present_utc_month_and_a_month_is_itself() {
        assert_eq!(resolve_cycle("current"), current_month());
        assert_eq!(resolve_cycle("2026-10"), "2026-10");
    }
}
