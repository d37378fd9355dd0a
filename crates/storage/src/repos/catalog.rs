//! Catalog bulk edits (`bulkEditCatalogFamilies`).
//!
//! One request sets one text field (`fieldKey`) to `value` on 1 to 500 catalog families of
//! the workspace, all or nothing. Rules, in order; the first rule that fails answers, listing
//! every violation of that rule:
//! 1. 422 `incomplete_pair`: one half of a pair (`primaryItemId`/`primaryItemVersion`,
//!    `primaryFamilySourceId`/`…Version`, `primaryItemSourceId`/`…Version`) without the
//!    other; the pointer names the missing half.
//! 2. 422 `duplicate_target`: a `familyId` named by an earlier target; the pointer names
//!    the later one.
//! 3. 422 `unknown_family`: a family that is not in the workspace (or an id that names no
//!    record).
//! 4. 409 `version_conflict`: `familyVersion` is not the family's version, or a pair is
//!    not the family's current primary item (or source) at that version. `conflicts[]`
//!    lists every mismatch: the stale version's pointer, or the pair id's pointer when the
//!    id differs (then `currentVersion` is the current record's version, 0 without one).
//!
//! On success every target's `version` rises by exactly 1 (even when its value is
//! unchanged), `updatedCount` counts the families whose value changed, and the id lists are
//! unique and sorted numerically.
//!
//! Concurrency: inside one write transaction every target is first claimed with
//! `UPDATE … SET version = version + 1 WHERE id = ? AND version = ? AND <pairs match>`
//! (in ascending id order, so concurrent edits lock rows in the same order) and its row
//! count checked; only when all are claimed is the field written. A claim that matches no
//! row (a concurrent edit committed first) answers `version_conflict` and rolls back, so two
//! edits with the same expected versions can never both succeed.

use crate::db_write;
use crate::engine::DbConn;
use crate::engine::Write;
use crate::error::{RuleViolation, StoreError, VersionConflict};
use crate::ids::{self, SentId};
use crate::models;
use crate::schema::{catalog_families as families, project_items};
use diesel::prelude::*;
use std::collections::{HashMap, HashSet};
use wpds_contract::types::{
    BulkEditConflict, CatalogBulkEditRequestFieldKey as FieldKey, CatalogBulkEditResult,
};

/// A bulk edit: one text field set to one value on every target family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyFieldChange {
    /// The families to edit, in the request's order (1 to 500).
    pub targets: Vec<FamilyTarget>,
    /// The field to set.
    pub field_key: FieldKey,
    /// Its new text.
    pub value: String,
}

/// One family a bulk edit names and the versions the client saw. The optional ids and
/// versions come in pairs; a complete pair asserts the family's current primary item (or
/// source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyTarget {
    /// The family.
    pub family_id: SentId,
    /// The family's version the client saw.
    pub family_version: i64,
    /// The primary item the client saw.
    pub primary_item_id: Option<SentId>,
    /// The primary item's version the client saw.
    pub primary_item_version: Option<i64>,
    /// The primary family source the client saw.
    pub primary_family_source_id: Option<SentId>,
    /// The primary family source's version the client saw.
    pub primary_family_source_version: Option<i64>,
    /// The primary item source the client saw.
    pub primary_item_source_id: Option<SentId>,
    /// The primary item source's version the client saw.
    pub primary_item_source_version: Option<i64>,
}

impl models::CatalogFamilyRow {
    /// The current text of `key`.
    fn field(&self, key: FieldKey) -> &str {
        match key {
            FieldKey::Name => &self.name,
            FieldKey::Description => &self.description,
            FieldKey::Brand => &self.brand,
            FieldKey::ModelNumber => &self.model_number,
            FieldKey::Finish => &self.finish,
            FieldKey::Material => &self.material,
            FieldKey::LeadTime => &self.lead_time,
            FieldKey::Notes => &self.notes,
        }
    }

    /// The current id and version of the record `kind` names, if the family has one.
    fn current(&self, kind: PairKind) -> (Option<i64>, Option<i64>) {
        match kind {
            PairKind::Item => (self.primary_item_id, self.primary_item_version),
            PairKind::FamilySource => (self.primary_family_source_id, self.primary_family_source_version),
            PairKind::ItemSource => (self.primary_item_source_id, self.primary_item_source_version),
        }
    }
}

/// The three id/version pairs a target may assert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PairKind {
    Item,
    FamilySource,
    ItemSource,
}

impl PairKind {
    const ALL: [PairKind; 3] = [PairKind::Item, PairKind::FamilySource, PairKind::ItemSource];

    /// The body field names of the id and the version.
    fn fields(self) -> (&'static str, &'static str) {
        match self {
            PairKind::Item => ("primaryItemId", "primaryItemVersion"),
            PairKind::FamilySource => ("primaryFamilySourceId", "primaryFamilySourceVersion"),
            PairKind::ItemSource => ("primaryItemSourceId", "primaryItemSourceVersion"),
        }
    }

    /// The halves of this pair as `target` sends them.
    fn sent(self, target: &FamilyTarget) -> (Option<&SentId>, Option<i64>) {
        match self {
            PairKind::Item => (target.primary_item_id.as_ref(), target.primary_item_version),
            PairKind::FamilySource => {
                (target.primary_family_source_id.as_ref(), target.primary_family_source_version)
            }
            PairKind::ItemSource => {
                (target.primary_item_source_id.as_ref(), target.primary_item_source_version)
            }
        }
    }
}

/// One asserted pair: which, the id it names (if any), the version.
#[derive(Debug, Clone)]
struct Assertion {
    kind: PairKind,
    id: Option<i64>,
    version: i64,
}

/// A target that passed the 422 rules.
#[derive(Debug, Clone)]
struct Target {
    index: usize,
    family_id: i64,
    family_version: i64,
    assertions: Vec<Assertion>,
}

/// Rule 1: every pair complete.
fn incomplete_pairs(targets: &[FamilyTarget]) -> Vec<RuleViolation> {
    let mut violations = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        for kind in PairKind::ALL {
            let (id_field, version_field) = kind.fields();
            let (given, missing) = match kind.sent(target) {
                (Some(_), None) => (id_field, version_field),
                (None, Some(_)) => (version_field, id_field),
                _ => continue,
            };
            violations.push(RuleViolation::new(
                "incomplete_pair",
                format!("/targets/{i}/{missing}"),
                format!("{given} is given without {missing}"),
            ));
        }
    }
    violations
}

/// Rule 2: no family named twice.
fn duplicate_targets(targets: &[FamilyTarget]) -> Vec<RuleViolation> {
    // Ids compare as sent: two texts are the same family only if they are the same text.
    let mut first_seen: HashMap<&SentId, usize> = HashMap::new();
    let mut violations = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        match first_seen.get(&target.family_id) {
            Some(first) => violations.push(RuleViolation::new(
                "duplicate_target",
                format!("/targets/{i}/familyId"),
                format!("family {} is already target {first}", target.family_id),
            )),
            None => {
                first_seen.insert(&target.family_id, i);
            }
        }
    }
    violations
}

/// Every stale assertion of `targets` against `rows`, skipping the families in `claimed`
/// (already checked and claimed by this transaction).
fn stale_assertions(
    targets: &[Target],
    rows: &HashMap<i64, models::CatalogFamilyRow>,
    claimed: &HashSet<i64>,
) -> Vec<BulkEditConflict> {
    let mut conflicts = Vec::new();
    for target in targets.iter().filter(|t| !claimed.contains(&t.family_id)) {
        let family_id = ids::show(target.family_id);
        let conflict = |field: &str, current_version: i64| BulkEditConflict {
            family_id: family_id.clone(),
            pointer: format!("/targets/{}/{field}", target.index),
            current_version,
        };
        let Some(row) = rows.get(&target.family_id) else {
            conflicts.push(conflict("familyVersion", 0));
            continue;
        };
        if row.version != target.family_version {
            conflicts.push(conflict("familyVersion", row.version));
        }
        for assertion in &target.assertions {
            let (id_field, version_field) = assertion.kind.fields();
            let (current_id, current_version) = row.current(assertion.kind);
            if current_id.is_none() || current_id != assertion.id {
                conflicts.push(conflict(id_field, current_version.unwrap_or(0)));
            } else if current_version != Some(assertion.version) {
                conflicts.push(conflict(version_field, current_version.unwrap_or(0)));
            }
        }
    }
    conflicts
}

/// The 409 for `conflicts`.
fn version_conflict(conflicts: Vec<BulkEditConflict>) -> StoreError {
    let detail = match conflicts.len() {
        1 => "1 asserted version is not current; nothing changed.".to_owned(),
        n => format!("{n} asserted versions are not current; nothing changed."),
    };
    StoreError::VersionConflict(Box::new(VersionConflict {
        detail,
        current_version: None,
        current_revision: None,
        current: None,
        conflicts: Some(conflicts),
    }))
}

/// Sorted, unique, shown.
fn id_list(mut list: Vec<i64>) -> Vec<String> {
    list.sort_unstable();
    list.dedup();
    list.into_iter().map(ids::show).collect()
}

/// Applies `change` to the catalog families of `workspace_id`, all or nothing (see the
/// module documentation for the rules and their order).
pub fn bulk_edit(workspace_id: i64, change: FamilyFieldChange) -> Write<CatalogBulkEditResult> {
    Write::new("SELECT catalog_families UPDATE catalog_families SELECT project_items", move |conn| {
        bulk_edit_on(conn, workspace_id, change)
    })
}

/// [`bulk_edit`] on `conn`.
fn bulk_edit_on(
    conn: &mut DbConn,
    workspace_id: i64,
    change: FamilyFieldChange,
) -> Result<CatalogBulkEditResult, StoreError> {
    let incomplete = incomplete_pairs(&change.targets);
    if !incomplete.is_empty() {
        return Err(StoreError::Rule(incomplete));
    }
    let duplicates = duplicate_targets(&change.targets);
    if !duplicates.is_empty() {
        return Err(StoreError::Rule(duplicates));
    }
    let named: Vec<i64> = change.targets.iter().filter_map(|t| t.family_id.record()).collect();
    let field_key = change.field_key;
    let value = change.value;
    db_write!(conn => {
        // The named families of the workspace, by id: read before the claims, and again if
        // a claim finds that a concurrent edit committed since.
        let named_families = |conn: &mut _| {
            families::table
                .filter(families::workspace_id.eq(workspace_id))
                .filter(families::id.eq_any(&named))
                .select(models::CatalogFamilyRow::as_select())
                .load::<models::CatalogFamilyRow>(conn)
                .map(|rows| rows.into_iter().map(|row| (row.id, row)).collect::<HashMap<_, _>>())
        };
        let rows = named_families(conn)?;

        let mut unknown = Vec::new();
        let mut targets = Vec::with_capacity(change.targets.len());
        for (index, target) in change.targets.iter().enumerate() {
            let Some(family_id) = target.family_id.record().filter(|id| rows.contains_key(id)) else {
                unknown.push(RuleViolation::new(
                    "unknown_family",
                    format!("/targets/{index}/familyId"),
                    format!("no family {} in this workspace", target.family_id),
                ));
                continue;
            };
            let assertions = PairKind::ALL
                .into_iter()
                .filter_map(|kind| match kind.sent(target) {
                    (Some(id), Some(version)) => Some(Assertion { kind, id: id.record(), version }),
                    _ => None,
                })
                .collect();
            targets.push(Target { index, family_id, family_version: target.family_version, assertions });
        }
        if !unknown.is_empty() {
            return Err(StoreError::Rule(unknown));
        }

        let conflicts = stale_assertions(&targets, &rows, &HashSet::new());
        if !conflicts.is_empty() {
            return Err(version_conflict(conflicts));
        }

        let mut claim_order: Vec<&Target> = targets.iter().collect();
        claim_order.sort_unstable_by_key(|t| t.family_id);
        let mut claimed = HashSet::with_capacity(targets.len());
        for target in claim_order {
            let mut claim = diesel::update(
                families::table
                    .filter(families::id.eq(target.family_id))
                    .filter(families::version.eq(target.family_version)),
            )
            .set(families::version.eq(families::version + 1))
            .into_boxed();
            for assertion in &target.assertions {
                claim = match assertion.kind {
                    PairKind::Item => claim
                        .filter(families::primary_item_id.eq(assertion.id))
                        .filter(families::primary_item_version.eq(assertion.version)),
                    PairKind::FamilySource => claim
                        .filter(families::primary_family_source_id.eq(assertion.id))
                        .filter(families::primary_family_source_version.eq(assertion.version)),
                    PairKind::ItemSource => claim
                        .filter(families::primary_item_source_id.eq(assertion.id))
                        .filter(families::primary_item_source_version.eq(assertion.version)),
                };
            }
            if claim.execute(conn)? != 1 {
                // A concurrent edit committed after the read above: report the rows as
                // they are now (the families claimed so far matched and stay unreported).
                let now = named_families(conn)?;
                let mut conflicts = stale_assertions(&targets, &now, &claimed);
                if conflicts.is_empty() {
                    conflicts.push(BulkEditConflict {
                        family_id: ids::show(target.family_id),
                        pointer: format!("/targets/{}/familyVersion", target.index),
                        current_version: now.get(&target.family_id).map_or(0, |row| row.version),
                    });
                }
                return Err(version_conflict(conflicts));
            }
            claimed.insert(target.family_id);
        }

        let family_ids: Vec<i64> = targets.iter().map(|t| t.family_id).collect();
        let edited = families::table.filter(families::id.eq_any(&family_ids));
        match field_key {
            FieldKey::Name => diesel::update(edited).set(families::name.eq(&value)).execute(conn)?,
            FieldKey::Description => diesel::update(edited).set(families::description.eq(&value)).execute(conn)?,
            FieldKey::Brand => diesel::update(edited).set(families::brand.eq(&value)).execute(conn)?,
            FieldKey::ModelNumber => diesel::update(edited).set(families::model_number.eq(&value)).execute(conn)?,
            FieldKey::Finish => diesel::update(edited).set(families::finish.eq(&value)).execute(conn)?,
            FieldKey::Material => diesel::update(edited).set(families::material.eq(&value)).execute(conn)?,
            FieldKey::LeadTime => diesel::update(edited).set(families::lead_time.eq(&value)).execute(conn)?,
            FieldKey::Notes => diesel::update(edited).set(families::notes.eq(&value)).execute(conn)?,
        };

        let project_ids: Vec<i64> = project_items::table
            .filter(project_items::family_id.eq_any(&family_ids))
            .select(project_items::project_id)
            .distinct()
            .load(conn)?;
        let updated_count = targets
            .iter()
            .filter(|t| rows.get(&t.family_id).is_some_and(|row| row.field(field_key) != value))
            .count();
        Ok(CatalogBulkEditResult {
            updated_count: i64::try_from(updated_count).unwrap_or(i64::MAX),
            family_ids: id_list(family_ids),
            affected_parent_family_ids: id_list(
                targets.iter().filter_map(|t| rows.get(&t.family_id).and_then(|row| row.parent_family_id)).collect(),
            ),
            affected_project_ids: id_list(project_ids),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(id: &str) -> SentId {
        SentId::parse(id.to_owned())
    }

    fn target(family_id: &str) -> FamilyTarget {
        FamilyTarget {
            family_id: sent(family_id),
            family_version: 1,
            primary_item_id: None,
            primary_item_version: None,
            primary_family_source_id: None,
            primary_family_source_version: None,
            primary_item_source_id: None,
            primary_item_source_version: None,
        }
    }

    #[test]
    fn an_incomplete_pair_points_at_its_missing_half() {
        let mut first = target("1");
        first.primary_item_id = Some(sent("5"));
        first.primary_item_source_version = Some(2);
        let mut second = target("2");
        second.primary_family_source_version = Some(1);
        let pointers: Vec<String> =
            incomplete_pairs(&[first, second]).into_iter().map(|v| v.pointer).collect();
        assert_eq!(
            pointers,
            [
                "/targets/0/primaryItemVersion",
                "/targets/0/primaryItemSourceId",
                "/targets/1/primaryFamilySourceId"
            ]
        );
    }

    #[test]
    fn every_later_repetition_of_a_family_is_a_duplicate() {
        let pointers: Vec<String> = duplicate_targets(&[target("1"), target("2"), target("1"), target("1")])
            .into_iter()
            .map(|v| v.pointer)
            .collect();
        assert_eq!(pointers, ["/targets/2/familyId", "/targets/3/familyId"]);
    }
}
