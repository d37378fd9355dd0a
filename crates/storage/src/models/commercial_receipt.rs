//! The `commercial_receipts` table: commercial sync-update receipts of a project.
//!
//! Two shapes: [`CommercialReceiptRow`] is the whole row (the seed loader writes it);
//! [`ListedReceiptRow`] is what a project's listing reads, every column but `workspace_id`,
//! because the listing's project already fixes the workspace and it is a hot path
//! (`listCommercialReceipts`, measured by `scripts/bench`): it reads no more than it shows.

use crate::schema::commercial_receipts;
use diesel::prelude::*;

/// A commercial sync-update receipt, as its table holds it.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = commercial_receipts, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct CommercialReceiptRow {
    /// The receipt's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The project it belongs to.
    pub project_id: i64,
    /// The project item as it was when the update ran (it may be gone since).
    pub project_item_id: i64,
    /// The project item's name then.
    pub project_item_name: String,
    /// The catalog family as it was when the update ran (it may be gone since).
    pub family_id: i64,
    /// The family's name then.
    pub family_name: String,
    /// The family's image, `""` when it has none.
    pub primary_image_url: String,
    /// Who ran the update.
    pub actor_name: String,
    /// `applied` or `skipped_already_in_sync`.
    pub outcome: String,
    /// The fields the update changed (or found in sync), a JSON list.
    pub fields: String,
    /// The catalog release the update came from, a JSON object.
    pub release: String,
    /// When the update ran (ms since the epoch); with `id`, the listing's order.
    pub created_at: i64,
}

/// A receipt as a project's listing reads it: [`CommercialReceiptRow`] without
/// `workspace_id`.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = commercial_receipts, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ListedReceiptRow {
    /// The receipt's id.
    pub id: i64,
    /// The project it belongs to.
    pub project_id: i64,
    /// The project item as it was when the update ran.
    pub project_item_id: i64,
    /// The project item's name then.
    pub project_item_name: String,
    /// The catalog family as it was when the update ran.
    pub family_id: i64,
    /// The family's name then.
    pub family_name: String,
    /// The family's image, `""` when it has none.
    pub primary_image_url: String,
    /// Who ran the update.
    pub actor_name: String,
    /// `applied` or `skipped_already_in_sync`.
    pub outcome: String,
    /// The fields the update changed (or found in sync), a JSON list.
    pub fields: String,
    /// The catalog release the update came from, a JSON object.
    pub release: String,
    /// When the update ran (ms since the epoch).
    pub created_at: i64,
}
