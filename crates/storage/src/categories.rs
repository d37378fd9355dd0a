//! Category settings (operation 4.7).
//!
//! A patch holds three lists applied in order in one transaction: item-column activations
//! for product types (`ops`), product-type codes, category codes. An accepted, non-empty
//! patch raises the path category's `revision` by exactly 1; an empty patch only checks
//! the revision. Codes are unique across the workspace's product types and categories;
//! patches of one workspace are serialised by a lock on the workspace, so two concurrent
//! patches can never both take the same code.

use crate::db::DbConn;
use crate::db_write;
use crate::error::{RuleViolation, StateConflict, StoreError, VersionConflict};
use crate::ids;
use crate::locks::RowLocks;
use crate::schema::{categories, item_columns, product_type_columns, product_types};
use diesel::prelude::*;
use serde_json::json;
use std::collections::HashSet;
use wpds_contract::types::{CategorySettingsResult, PatchCategorySettingsRequest};

/// Applies `patch` to category `category` of `workspace_id`.
///
/// Rules, in order: not found for a category outside the workspace; 422
/// `unknown_reference` for every unknown product type, item column or category; 409
/// `code_taken` for a code another product type or category uses; `version_conflict`
/// for a stale `expectedRevision`.
pub fn patch_settings(
    conn: &mut DbConn,
    workspace_id: i64,
    category: &str,
    patch: PatchCategorySettingsRequest,
) -> Result<CategorySettingsResult, StoreError> {
    let not_found = || StoreError::NotFound(format!("category {category}"));
    let category_id = ids::parse(category).ok_or_else(not_found)?;
    let ops = patch.ops.unwrap_or_default();
    let type_codes = patch.product_type_code_ops.unwrap_or_default();
    let category_codes = patch.category_code_ops.unwrap_or_default();
    db_write!(conn => {
        // Codes are unique across the workspace and a patch may touch any of its records:
        // patches of one workspace run one at a time (PostgreSQL; SQLite is serial anyway),
        // which also keeps their row updates from deadlocking.
        conn.lock_workspace(workspace_id)?;
        let revision: i64 = categories::table
            .filter(categories::id.eq(category_id))
            .filter(categories::workspace_id.eq(workspace_id))
            .select(categories::revision)
            .first(conn)
            .optional()?
            .ok_or_else(not_found)?;

        let known_types: HashSet<i64> = product_types::table
            .filter(product_types::workspace_id.eq(workspace_id))
            .select(product_types::id)
            .load::<i64>(conn)?
            .into_iter()
            .collect();
        let known_columns: HashSet<i64> = item_columns::table
            .filter(item_columns::workspace_id.eq(workspace_id))
            .select(item_columns::id)
            .load::<i64>(conn)?
            .into_iter()
            .collect();
        let known_categories: HashSet<i64> = categories::table
            .filter(categories::workspace_id.eq(workspace_id))
            .select(categories::id)
            .load::<i64>(conn)?
            .into_iter()
            .collect();
        let mut unknown = Vec::new();
        let mut check = |text: &str, known: &HashSet<i64>, pointer: String, what: &str| -> Option<i64> {
            let id = ids::parse(text).filter(|id| known.contains(id));
            if id.is_none() {
                unknown.push(RuleViolation::new("unknown_reference", pointer, format!("no {what} {text} in this workspace")));
            }
            id
        };
        let mut activations = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let t = check(&op.product_type_id, &known_types, format!("/ops/{i}/productTypeId"), "product type");
            let c = check(&op.item_column_id, &known_columns, format!("/ops/{i}/itemColumnId"), "item column");
            if let (Some(t), Some(c)) = (t, c) {
                activations.push((t, c, op.is_active));
            }
        }
        let mut code_writes = Vec::new();
        for (i, op) in type_codes.iter().enumerate() {
            let pointer = format!("/productTypeCodeOps/{i}/productTypeId");
            if let Some(t) = check(&op.product_type_id, &known_types, pointer, "product type") {
                code_writes.push((Target::ProductType(t), op.code.clone(), format!("/productTypeCodeOps/{i}/code")));
            }
        }
        for (i, op) in category_codes.iter().enumerate() {
            let pointer = format!("/categoryCodeOps/{i}/categoryId");
            if let Some(c) = check(&op.category_id, &known_categories, pointer, "category") {
                code_writes.push((Target::Category(c), op.code.clone(), format!("/categoryCodeOps/{i}/code")));
            }
        }
        if !unknown.is_empty() {
            return Err(StoreError::Rule(unknown));
        }

        for (product_type, column, active) in &activations {
            diesel::insert_into(product_type_columns::table)
                .values((
                    product_type_columns::product_type_id.eq(product_type),
                    product_type_columns::item_column_id.eq(column),
                    product_type_columns::is_active.eq(active),
                ))
                .on_conflict((product_type_columns::product_type_id, product_type_columns::item_column_id))
                .do_update()
                .set(product_type_columns::is_active.eq(active))
                .execute(conn)?;
        }
        for (target, code, pointer) in &code_writes {
            let (own_type, own_category) = match target {
                Target::ProductType(id) => (Some(*id), None),
                Target::Category(id) => (None, Some(*id)),
            };
            let type_holder: Option<i64> = product_types::table
                .filter(product_types::workspace_id.eq(workspace_id))
                .filter(product_types::code.eq(code))
                .filter(product_types::id.ne(own_type.unwrap_or(0)))
                .select(product_types::id)
                .first(conn)
                .optional()?;
            let category_holder: Option<i64> = categories::table
                .filter(categories::workspace_id.eq(workspace_id))
                .filter(categories::code.eq(code))
                .filter(categories::id.ne(own_category.unwrap_or(0)))
                .select(categories::id)
                .first(conn)
                .optional()?;
            let holder = type_holder
                .map(|id| format!("product type {id}"))
                .or_else(|| category_holder.map(|id| format!("category {id}")));
            if let Some(holder) = holder {
                return Err(StoreError::State(Box::new(StateConflict {
                    code: "code_taken",
                    detail: format!("Code {code} is used by {holder}."),
                    current: None,
                    violations: vec![RuleViolation::new("code_taken", pointer.clone(), format!("used by {holder}"))],
                })));
            }
            match target {
                Target::ProductType(id) => diesel::update(product_types::table.filter(product_types::id.eq(id)))
                    .set(product_types::code.eq(code))
                    .execute(conn)?,
                Target::Category(id) => diesel::update(categories::table.filter(categories::id.eq(id)))
                    .set(categories::code.eq(code))
                    .execute(conn)?,
            };
        }

        let stale = || StoreError::VersionConflict(Box::new(VersionConflict {
            detail: format!("The category settings are at revision {revision}, not {}.", patch.expected_revision),
            current_version: None,
            current_revision: Some(revision),
            current: Some(json!({ "revision": revision })),
            conflicts: None,
        }));
        if revision != patch.expected_revision {
            return Err(stale());
        }
        if activations.is_empty() && code_writes.is_empty() {
            return Ok(CategorySettingsResult { revision });
        }
        let bumped = diesel::update(
            categories::table.filter(categories::id.eq(category_id)).filter(categories::revision.eq(revision)),
        )
        .set(categories::revision.eq(categories::revision + 1))
        .returning(categories::revision)
        .get_result::<i64>(conn)
        .optional()?;
        bumped.map(|revision| CategorySettingsResult { revision }).ok_or_else(stale)
    })
}

/// The record a code is written to.
enum Target {
    ProductType(i64),
    Category(i64),
}

/// The item columns configured for a product type and whether each is active, by column id
/// (for operators and tests; the API has no read operation for it).
pub fn column_activations(conn: &mut DbConn, product_type_id: i64) -> Result<Vec<(i64, bool)>, StoreError> {
    let mut rows: Vec<(i64, bool)> = crate::db_run!(conn => product_type_columns::table
        .filter(product_type_columns::product_type_id.eq(product_type_id))
        .select((product_type_columns::item_column_id, product_type_columns::is_active))
        .load(conn))?;
    rows.sort_unstable();
    Ok(rows)
}
