//! Category settings (`patchCategorySettings`).
//!
//! A patch holds three lists applied in order in one transaction: item-column activations
//! for product types (`ops`), product-type codes, category codes. `ops` and product-type
//! codes name product types of the path category only; category codes may name any
//! category of the workspace. An accepted, non-empty patch raises the path category's
//! `revision` by exactly 1, and the revision of every other category whose code it changes
//! by 1; an empty patch only checks the revision. Codes are unique across the workspace's
//! product types and categories; patches of one workspace are serialised by a lock on the
//! workspace, so two concurrent patches can never both take the same code.
//!
//! A patch may hold tens of thousands of ops (1 MiB of them). Each op as its own statements
//! made the cost superlinear on PostgreSQL (every update of the same row lengthens its
//! version chain within the transaction) and held the workspace's lock for seconds. So the
//! patch reads what it can touch once (the workspace's codes, the path category's
//! activations), applies every op in order in memory, decides every rule there, and writes
//! only the rows whose final value differs: its cost is linear in its ops plus the rows
//! it reads, and a patch that breaks a rule writes nothing.

use crate::db_write;
use crate::engine::DbConn;
#[cfg(feature = "test-support")]
use crate::engine::Read;
use crate::engine::Write;
use crate::error::{Refusal, RuleViolation, StateConflict, StoreError, VersionConflict};
use crate::ids::SentId;
use crate::repos::locks::RowLocks;
use crate::schema::{categories, item_columns, product_type_columns, product_types};
use diesel::prelude::*;
use diesel::upsert::excluded;
use serde_json::json;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use wpds_contract::types::CategorySettingsResult;

/// A settings patch of one category: three lists, applied in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategorySettingsChange {
    /// The settings revision the client saw.
    pub expected_revision: i64,
    /// Item-column activations of the category's product types, applied first.
    pub ops: Vec<ColumnActivationChange>,
    /// Codes of the category's product types, applied second.
    pub product_type_codes: Vec<CodeChange>,
    /// Codes of categories of the workspace, applied last.
    pub category_codes: Vec<CodeChange>,
}

/// Activates or deactivates an item column for a product type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnActivationChange {
    /// The product type, of the path category.
    pub product_type_id: SentId,
    /// The item column, of the workspace.
    pub item_column_id: SentId,
    /// Whether the column becomes active.
    pub is_active: bool,
}

/// Gives a product type (or a category) a code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChange {
    /// The product type (or category).
    pub id: SentId,
    /// Its new code.
    pub code: String,
}

/// Rows per multi-row activation upsert: 3 bind parameters each, far below SQLite's
/// 32 766 and PostgreSQL's 65 535 parameters per statement.
const UPSERT_CHUNK: usize = 1000;

/// Applies `patch` to category `category_id` of `workspace_id`.
///
/// Rules, in order: not found for a category outside the workspace; 422
/// `unknown_reference` for every unknown item column or category and every product type
/// not of the path category; 409 `code_taken` for the first code op (in order) whose code
/// another product type or category holds at that point of the patch; `version_conflict`
/// for a stale `expectedRevision`. Any of them writes nothing.
///
/// `patch` is shared so that the caller can drop it on its own thread, after the write: a
/// patch of tens of thousands of ops is as many allocations, which the thread that made them
/// frees several times faster than the SQLite writer (and the writer would do it holding
/// the lock).
pub fn patch_settings(
    workspace_id: i64,
    category_id: i64,
    patch: Arc<CategorySettingsChange>,
) -> Write<CategorySettingsResult> {
    Write::new(
        "SELECT categories product_types item_columns product_type_columns INSERT product_type_columns UPDATE product_types categories",
        move |conn| patch_settings_on(conn, workspace_id, category_id, &patch),
    )
}

/// [`patch_settings`] on `conn`.
fn patch_settings_on(
    conn: &mut DbConn,
    workspace_id: i64,
    category_id: i64,
    patch: &CategorySettingsChange,
) -> Result<CategorySettingsResult, StoreError> {
    let not_found = || StoreError::NotFound(format!("category {category_id}"));
    let ops = patch.ops.as_slice();
    let type_codes = patch.product_type_codes.as_slice();
    let category_codes = patch.category_codes.as_slice();
    db_write!(conn => {
        // Codes are unique across the workspace and a patch may touch any of its categories:
        // patches of one workspace run one at a time (PostgreSQL; SQLite is serial anyway),
        // which also keeps their row updates from deadlocking.
        conn.lock_workspace(workspace_id)?;
        let workspace_categories: Vec<(i64, Option<String>, i64)> = categories::table
            .filter(categories::workspace_id.eq(workspace_id))
            .select((categories::id, categories::code, categories::revision))
            .load(conn)?;
        let revision = workspace_categories
            .iter()
            .find(|(id, _, _)| *id == category_id)
            .map(|(_, _, revision)| *revision)
            .ok_or_else(not_found)?;
        let has_code_ops = !type_codes.is_empty() || !category_codes.is_empty();
        let mut workspace_types: Vec<(i64, i64, Option<String>)> = Vec::new();
        if has_code_ops || !ops.is_empty() {
            // Code ops need every holder of a code in the workspace; `ops` only the
            // category's own product types; an empty patch (a revision check) none.
            let mut types = product_types::table
                .filter(product_types::workspace_id.eq(workspace_id))
                .select((product_types::id, product_types::category_id, product_types::code))
                .into_boxed();
            if !has_code_ops {
                types = types.filter(product_types::category_id.eq(category_id));
            }
            workspace_types = types.load(conn)?;
        }
        let mut columns = HashSet::new();
        let mut activations = Vec::new();
        if !ops.is_empty() {
            columns = item_columns::table
                .filter(item_columns::workspace_id.eq(workspace_id))
                .select(item_columns::id)
                .load::<i64>(conn)?
                .into_iter()
                .collect();
            activations = product_type_columns::table
                .filter(product_type_columns::product_type_id.eq_any(
                    product_types::table.filter(product_types::category_id.eq(category_id)).select(product_types::id),
                ))
                .select((
                    product_type_columns::product_type_id,
                    product_type_columns::item_column_id,
                    product_type_columns::is_active,
                ))
                .load::<(i64, i64, bool)>(conn)?;
        }
        let settings = Settings {
            category_id,
            categories: workspace_categories,
            product_types: workspace_types,
            columns,
            activations,
        };
        let changes = settings.apply(ops, type_codes, category_codes)?;

        if revision != patch.expected_revision {
            return Err(StoreError::VersionConflict(Box::new(VersionConflict {
                detail: format!(
                    "The category settings are at revision {revision}, not {}.",
                    patch.expected_revision
                ),
                current_version: None,
                current_revision: Some(revision),
                current: Some(json!({ "revision": revision })),
                conflicts: None,
            })));
        }
        if ops.is_empty() && type_codes.is_empty() && category_codes.is_empty() {
            return Ok(CategorySettingsResult { revision });
        }

        for chunk in changes.activations.chunks(UPSERT_CHUNK) {
            let rows: Vec<_> = chunk
                .iter()
                .map(|&(product_type, column, active)| {
                    (
                        product_type_columns::product_type_id.eq(product_type),
                        product_type_columns::item_column_id.eq(column),
                        product_type_columns::is_active.eq(active),
                    )
                })
                .collect();
            diesel::insert_into(product_type_columns::table)
                .values(rows)
                .on_conflict((product_type_columns::product_type_id, product_type_columns::item_column_id))
                .do_update()
                .set(product_type_columns::is_active.eq(excluded(product_type_columns::is_active)))
                .execute(conn)?;
        }
        for (id, code) in &changes.product_type_codes {
            diesel::update(product_types::table.filter(product_types::id.eq(id)))
                .set(product_types::code.eq(code))
                .execute(conn)?;
        }
        for (id, code) in &changes.category_codes {
            if *id == category_id {
                diesel::update(categories::table.filter(categories::id.eq(id)))
                    .set(categories::code.eq(code))
                    .execute(conn)?;
            } else {
                // Another category's settings changed: a client holding its revision must
                // learn of it.
                diesel::update(categories::table.filter(categories::id.eq(id)))
                    .set((categories::code.eq(code), categories::revision.eq(categories::revision + 1)))
                    .execute(conn)?;
            }
        }
        let bumped = diesel::update(categories::table.filter(categories::id.eq(category_id)))
            .set(categories::revision.eq(categories::revision + 1))
            .returning(categories::revision)
            .get_result::<i64>(conn)?;
        Ok(CategorySettingsResult { revision: bumped })
    })
}

/// What a patch may touch, as read at its start: the workspace's categories (id, code,
/// revision); the product types (id, category, code) it may need: every one of the
/// workspace when it has code ops, else the path category's; and, when it has `ops`, the
/// workspace's item columns and the path category's activations (product type, column,
/// active).
struct Settings {
    category_id: i64,
    categories: Vec<(i64, Option<String>, i64)>,
    product_types: Vec<(i64, i64, Option<String>)>,
    columns: HashSet<i64>,
    activations: Vec<(i64, i64, bool)>,
}

/// The rows a patch changes: only those whose final value differs from the stored one,
/// each once, in id order.
#[derive(Debug, Default)]
struct Changes {
    /// (product type, item column, active).
    activations: Vec<(i64, i64, bool)>,
    /// (product type, code).
    product_type_codes: Vec<(i64, String)>,
    /// (category, code).
    category_codes: Vec<(i64, String)>,
}

/// A record that can hold a code. Product types order first, so a clash names a product
/// type holder before a category one, as the rule's message always has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Holder {
    ProductType(i64),
    Category(i64),
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::ProductType(id) => write!(f, "product type {id}"),
            Holder::Category(id) => write!(f, "category {id}"),
        }
    }
}

/// Who holds each code, kept current while a patch's code ops are applied one by one.
/// Codes are not unique in storage (no index enforces it), so a code may have several
/// holders. The codes are borrowed from the stored rows and the ops: applying an op
/// allocates nothing.
struct CodeBook<'a> {
    holders: HashMap<&'a str, BTreeSet<Holder>>,
    codes: HashMap<Holder, Option<&'a str>>,
}

impl<'a> CodeBook<'a> {
    fn new(records: impl Iterator<Item = (Holder, Option<&'a str>)>) -> Self {
        let mut book = CodeBook { holders: HashMap::new(), codes: HashMap::new() };
        for (holder, code) in records {
            if let Some(code) = code {
                book.holders.entry(code).or_default().insert(holder);
            }
            book.codes.insert(holder, code);
        }
        book
    }

    /// Gives `holder` `code`, unless another record holds it now: then that record.
    fn set(&mut self, holder: Holder, code: &'a str) -> Result<(), Holder> {
        if let Some(other) = self.holders.get(code).and_then(|set| set.iter().find(|h| **h != holder)) {
            return Err(*other);
        }
        if let Some(Some(old)) = self.codes.insert(holder, Some(code))
            && let Some(set) = self.holders.get_mut(old)
        {
            set.remove(&holder);
        }
        self.holders.entry(code).or_default().insert(holder);
        Ok(())
    }

    /// The final code of `holder`, where it differs from `stored`.
    fn changed(&self, holder: Holder, stored: Option<&str>) -> Option<String> {
        self.codes.get(&holder).copied().flatten().filter(|code| Some(*code) != stored).map(str::to_owned)
    }
}

impl Settings {
    /// Applies the three lists in order in memory and returns the rows that change: 422
    /// `unknown_reference` naming every unknown reference, else 409 `code_taken` for the
    /// first code op that clashes, exactly as applying the ops one by one would decide.
    fn apply(
        &self,
        ops: &[ColumnActivationChange],
        type_codes: &[CodeChange],
        category_codes: &[CodeChange],
    ) -> Result<Changes, StoreError> {
        let own_types: HashSet<i64> = self
            .product_types
            .iter()
            .filter(|(_, category, _)| *category == self.category_id)
            .map(|(id, _, _)| *id)
            .collect();
        let workspace_categories: HashSet<i64> = self.categories.iter().map(|(id, _, _)| *id).collect();
        let mut unknown = Vec::new();
        // `what` is (record, scope), for the message.
        let mut known =
            |sent: &SentId, known: &HashSet<i64>, pointer: String, what: (&str, &str)| -> Option<i64> {
                let id = sent.record().filter(|id| known.contains(id));
                if id.is_none() {
                    let (record, scope) = what;
                    unknown.push(RuleViolation::new(
                        "unknown_reference",
                        pointer,
                        format!("no {record} {sent} in this {scope}"),
                    ));
                }
                id
            };
        let type_where = ("product type", "category");
        let mut activations: HashMap<(i64, i64), bool> = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            let t = known(&op.product_type_id, &own_types, format!("/ops/{i}/productTypeId"), type_where);
            let c = known(
                &op.item_column_id,
                &self.columns,
                format!("/ops/{i}/itemColumnId"),
                ("item column", "workspace"),
            );
            if let (Some(t), Some(c)) = (t, c) {
                activations.insert((t, c), op.is_active);
            }
        }
        let mut code_ops = Vec::with_capacity(type_codes.len() + category_codes.len());
        for (i, op) in type_codes.iter().enumerate() {
            let pointer = format!("/productTypeCodeOps/{i}/productTypeId");
            if let Some(t) = known(&op.id, &own_types, pointer, type_where) {
                code_ops.push((Holder::ProductType(t), &op.code, ("productTypeCodeOps", i)));
            }
        }
        for (i, op) in category_codes.iter().enumerate() {
            let pointer = format!("/categoryCodeOps/{i}/categoryId");
            if let Some(c) = known(&op.id, &workspace_categories, pointer, ("category", "workspace")) {
                code_ops.push((Holder::Category(c), &op.code, ("categoryCodeOps", i)));
            }
        }
        if !unknown.is_empty() {
            return Err(StoreError::Rule(unknown));
        }

        let mut book = CodeBook::new(
            self.product_types
                .iter()
                .map(|(id, _, code)| (Holder::ProductType(*id), code.as_deref()))
                .chain(self.categories.iter().map(|(id, code, _)| (Holder::Category(*id), code.as_deref()))),
        );
        for (holder, code, (list, i)) in code_ops {
            if let Err(other) = book.set(holder, code) {
                return Err(StoreError::State(Box::new(StateConflict {
                    refusal: Refusal::CodeTaken,
                    detail: format!("Code {code} is used by {other}."),
                    current: None,
                    violations: vec![RuleViolation::new(
                        "code_taken",
                        format!("/{list}/{i}/code"),
                        format!("used by {other}"),
                    )],
                })));
            }
        }

        let stored: HashMap<(i64, i64), bool> =
            self.activations.iter().map(|&(t, c, active)| ((t, c), active)).collect();
        let mut changes = Changes {
            activations: activations
                .into_iter()
                .filter(|(key, active)| stored.get(key) != Some(active))
                .map(|((t, c), active)| (t, c, active))
                .collect(),
            product_type_codes: self
                .product_types
                .iter()
                .filter_map(|(id, _, code)| {
                    Some((*id, book.changed(Holder::ProductType(*id), code.as_deref())?))
                })
                .collect(),
            category_codes: self
                .categories
                .iter()
                .filter_map(|(id, code, _)| {
                    Some((*id, book.changed(Holder::Category(*id), code.as_deref())?))
                })
                .collect(),
        };
        changes.activations.sort_unstable();
        changes.product_type_codes.sort_unstable();
        changes.category_codes.sort_unstable();
        Ok(changes)
    }
}

/// The item columns configured for a product type and whether each is active, by column id
/// (for tests; the API has no read operation for it).
#[cfg(feature = "test-support")]
pub fn column_activations(product_type_id: i64) -> Read<Vec<(i64, bool)>> {
    Read::new("SELECT product_type_columns", move |conn| {
        let mut rows: Vec<(i64, bool)> = crate::db_run!(conn => product_type_columns::table
            .filter(product_type_columns::product_type_id.eq(product_type_id))
            .select((product_type_columns::item_column_id, product_type_columns::is_active))
            .load(conn))?;
        rows.sort_unstable();
        Ok(rows)
    })
}

/// (record id, code) rows.
#[cfg(feature = "test-support")]
type CodeRows = Vec<(i64, Option<String>)>;

/// Every code of workspace `workspace_id`, as (holder, code): its categories by id, then its
/// product types by id, each named as the `code_taken` rule names it (`category 3`,
/// `product type 21`); for tests (the API has no read operation for them).
#[cfg(feature = "test-support")]
pub fn codes(workspace_id: i64) -> Read<Vec<(String, Option<String>)>> {
    Read::new("SELECT categories product_types", move |conn| {
        let (mut categories, mut types): (CodeRows, CodeRows) = crate::db_run!(conn => {
            let categories = categories::table
                .filter(categories::workspace_id.eq(workspace_id))
                .select((categories::id, categories::code))
                .load(conn)?;
            let types = product_types::table
                .filter(product_types::workspace_id.eq(workspace_id))
                .select((product_types::id, product_types::code))
                .load(conn)?;
            Ok::<_, diesel::result::Error>((categories, types))
        })?;
        categories.sort_unstable();
        types.sort_unstable();
        Ok(categories
            .into_iter()
            .map(|(id, code)| (Holder::Category(id).to_string(), code))
            .chain(types.into_iter().map(|(id, code)| (Holder::ProductType(id).to_string(), code)))
            .collect())
    })
}
