//! Commercial sync-update receipts of a project (`listCommercialReceipts`).
//!
//! Rules, in order: 404 for a project not in the workspace; then a cursor this server did
//! not issue for this very listing is refused ([`ForeignCursor`], answered 400).
//!
//! Receipts are listed newest first: `created_at DESC, id DESC`. Pages are keyset pages:
//! the next page holds the rows strictly after the last row shown, written as the row-value
//! comparison `(created_at, id) < (c, i)`, which both planners read as a range on the
//! indexes `(project_id, created_at DESC, id DESC)` and `(project_id, outcome, created_at
//! DESC, id DESC)`, so every page costs the same however
//! deep it is; `limit + 1` rows are read to know whether more follow.
//!
//! A cursor is `base64url(payload) "." base64url(HMAC-SHA256(secret, scope, payload))`,
//! at most 200 characters. The payload is `{"v":1,"createdAt":ms,"id":n}`, the position
//! of the last row shown; the MAC also covers the workspace, the project and the outcome
//! filter (`""` for none), so a cursor is bound to the listing it was made for: used for
//! another project, workspace or outcome, altered in any character, truncated or made up,
//! its MAC does not verify. `limit` is not bound and may change between pages.
//!
//! The key is the secret `crate::engine::CURSOR_SIGNING`, provisioned when the database
//! is migrated, so every server process sharing one database signs and verifies with the
//! same key and a listing only reads. It is read on each request (one primary-key lookup):
//! a per-process cache would have to be keyed by database.

use crate::clock::format_millis;
use crate::db_run;
use crate::engine::DbConn;
use crate::engine::Read;
use crate::engine::{CURSOR_SIGNING, secret};
use crate::error::StoreError;
use crate::ids;
use crate::models;
use crate::schema::{commercial_receipts, projects};
use crate::stored::enum_value;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, Expression, SelectableExpression, ValidGrouping, is_aggregate};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, Bool, HasSqlType};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use wpds_contract::types::{
    CommercialReceipt, CommercialReceiptOutcome, CommercialReceiptPage, ReceiptField, ReceiptRelease,
};

/// The largest page.
pub(crate) const MAX_LIMIT: i64 = 100;

/// What separates a cursor's payload from its MAC.
const SEPARATOR: char = '.';

type HmacSha256 = Hmac<Sha256>;

/// One page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The workspace of the path.
    pub workspace_id: i64,
    /// The project of the path.
    pub project_id: i64,
    /// Only receipts with this outcome (its wire value), if any.
    pub outcome: Option<String>,
    /// Page size, 1 to `MAX_LIMIT` (values outside are clamped).
    pub limit: i64,
    /// The `nextCursor` of the previous page, if any.
    pub cursor: Option<String>,
}

/// The cursor is not one this server issued for this listing (forged, altered, truncated,
/// or made for another workspace, project or outcome).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignCursor;

/// The position a cursor carries: the last row of the page it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    /// Always 1.
    v: u8,
    /// The row's `created_at`, ms since the epoch.
    #[serde(rename = "createdAt")]
    created_at: i64,
    /// The row's id.
    id: i64,
}

impl models::ListedReceiptRow {
    /// The receipt as the contract shows it.
    fn into_receipt(self) -> Result<CommercialReceipt, StoreError> {
        let id = self.id;
        let bad = |what: &str, e: serde_json::Error| {
            StoreError::Internal(format!("commercial receipt {id}: bad stored {what}: {e}"))
        };
        let outcome = enum_value(
            "commercial receipt",
            id,
            "outcome",
            &self.outcome,
            CommercialReceiptOutcome::from_wire,
        )?;
        let fields: Vec<ReceiptField> = serde_json::from_str(&self.fields).map_err(|e| bad("fields", e))?;
        let release: ReceiptRelease = serde_json::from_str(&self.release).map_err(|e| bad("release", e))?;
        Ok(CommercialReceipt {
            id: ids::show(id),
            project_id: ids::show(self.project_id),
            project_item_id: ids::show(self.project_item_id),
            project_item_name: self.project_item_name,
            family_id: ids::show(self.family_id),
            family_name: self.family_name,
            primary_image_url: self.primary_image_url,
            actor_name: self.actor_name,
            outcome,
            fields,
            release,
            created_at: format_millis(self.created_at),
        })
    }
}

/// The listing a cursor is bound to.
struct Scope<'a> {
    workspace_id: i64,
    project_id: i64,
    outcome: &'a str,
}

impl Scope<'_> {
    /// The MAC of `payload` (the encoded position) within this listing.
    fn mac(&self, secret: &[u8], payload: &str) -> Result<HmacSha256, StoreError> {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(secret)
            .map_err(|e| StoreError::Internal(format!("cursor secret: {e}")))?;
        mac.update(
            format!(
                "wpds/commercial-receipts/v1\n{}\n{}\n{}\n",
                self.workspace_id, self.project_id, self.outcome
            )
            .as_bytes(),
        );
        mac.update(payload.as_bytes());
        Ok(mac)
    }

    /// The cursor that continues after `position`.
    fn issue(&self, secret: &[u8], position: Position) -> Result<String, StoreError> {
        let json = serde_json::to_vec(&position).map_err(|e| StoreError::Internal(format!("cursor: {e}")))?;
        let payload = URL_SAFE_NO_PAD.encode(json);
        let tag = URL_SAFE_NO_PAD.encode(self.mac(secret, &payload)?.finalize().into_bytes());
        Ok(format!("{payload}{SEPARATOR}{tag}"))
    }

    /// The position `cursor` carries, if this server issued it for this listing.
    fn read(&self, secret: &[u8], cursor: &str) -> Result<Result<Position, ForeignCursor>, StoreError> {
        let Some((payload, tag)) = cursor.split_once(SEPARATOR) else { return Ok(Err(ForeignCursor)) };
        let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else { return Ok(Err(ForeignCursor)) };
        if self.mac(secret, payload)?.verify_slice(&tag).is_err() {
            return Ok(Err(ForeignCursor));
        }
        let position = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|json| serde_json::from_slice::<Position>(&json).ok())
            .filter(|p| p.v == 1);
        Ok(position.ok_or(ForeignCursor))
    }
}

/// The keyset bound `(commercial_receipts.created_at, commercial_receipts.id) < (c, i)`:
/// a row-value comparison, which both planners read as a range on the page indexes, so a
/// page deep in the listing starts reading at its position.
///
/// Its own expression type, not `diesel::dsl::sql`, because diesel never keeps a statement
/// holding an SQL literal prepared: every deep page paid for parsing and planning its query
/// while page 1 (no literal) was prepared once per connection. This text never varies, so
/// the query is cached like page 1's.
#[derive(Debug, Clone, Copy, QueryId)]
struct Before {
    created_at: i64,
    id: i64,
}

impl Expression for Before {
    type SqlType = Bool;
}

impl AppearsOnTable<commercial_receipts::table> for Before {}

impl SelectableExpression<commercial_receipts::table> for Before {}

impl ValidGrouping<()> for Before {
    type IsAggregate = is_aggregate::Never;
}

impl<DB> QueryFragment<DB> for Before
where
    DB: Backend + HasSqlType<BigInt>,
    i64: ToSql<BigInt, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql("(commercial_receipts.created_at, commercial_receipts.id) < (");
        out.push_bind_param::<BigInt, _>(&self.created_at)?;
        out.push_sql(", ");
        out.push_bind_param::<BigInt, _>(&self.id)?;
        out.push_sql(")");
        Ok(())
    }
}

/// One page of the project's receipts, newest first; see the module documentation.
pub fn list(listing: Listing) -> Read<Result<CommercialReceiptPage, ForeignCursor>> {
    Read::new("SELECT projects server_secrets commercial_receipts", move |conn| list_on(conn, listing))
}

/// [`list`] on `conn`.
fn list_on(
    conn: &mut DbConn,
    listing: Listing,
) -> Result<Result<CommercialReceiptPage, ForeignCursor>, StoreError> {
    let Listing { workspace_id, project_id, outcome, limit, cursor } = listing;
    let limit = limit.clamp(1, MAX_LIMIT);
    let known: i64 = db_run!(conn => projects::table
        .filter(projects::id.eq(project_id))
        .filter(projects::workspace_id.eq(workspace_id))
        .count()
        .get_result(conn))?;
    if known == 0 {
        return Err(StoreError::NotFound(format!("project {project_id}")));
    }
    let key = secret(conn, CURSOR_SIGNING)?;
    let scope = Scope { workspace_id, project_id, outcome: outcome.as_deref().unwrap_or("") };
    let after = match cursor {
        Some(cursor) => match scope.read(&key, &cursor)? {
            Ok(position) => Some(position),
            Err(foreign) => return Ok(Err(foreign)),
        },
        None => None,
    };
    let rows: Vec<models::ListedReceiptRow> = db_run!(conn => {
        let mut query = commercial_receipts::table
            .filter(commercial_receipts::project_id.eq(project_id))
            .select(models::ListedReceiptRow::as_select())
            .into_boxed();
        if let Some(outcome) = &outcome {
            query = query.filter(commercial_receipts::outcome.eq(outcome.clone()));
        }
        if let Some(Position { created_at, id, .. }) = after {
            query = query.filter(Before { created_at, id });
        }
        query
            .order((commercial_receipts::created_at.desc(), commercial_receipts::id.desc()))
            .limit(limit + 1)
            .load(conn)
    })?;
    let has_more = rows.len() as i64 > limit;
    let shown: Vec<models::ListedReceiptRow> = rows.into_iter().take(limit as usize).collect();
    let next_cursor = match shown.last() {
        Some(last) if has_more => {
            scope.issue(&key, Position { v: 1, created_at: last.created_at, id: last.id })?
        }
        _ => String::new(),
    };
    let items =
        shown.into_iter().map(models::ListedReceiptRow::into_receipt).collect::<Result<Vec<_>, _>>()?;
    Ok(Ok(CommercialReceiptPage { items, next_cursor, has_more }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn scope(outcome: &str) -> Scope<'_> {
        Scope { workspace_id: 1, project_id: 7, outcome }
    }

    #[test]
    fn a_cursor_reads_back_only_in_its_own_listing() {
        let position = Position { v: 1, created_at: 1_763_739_112_437, id: 8977 };
        let cursor = scope("").issue(SECRET, position).unwrap();
        assert_eq!(scope("").read(SECRET, &cursor).unwrap(), Ok(position));
        assert_eq!(scope("applied").read(SECRET, &cursor).unwrap(), Err(ForeignCursor));
        let other_project = Scope { workspace_id: 1, project_id: 12, outcome: "" };
        assert_eq!(other_project.read(SECRET, &cursor).unwrap(), Err(ForeignCursor));
        let other_workspace = Scope { workspace_id: 2, project_id: 7, outcome: "" };
        assert_eq!(other_workspace.read(SECRET, &cursor).unwrap(), Err(ForeignCursor));
        assert_eq!(scope("").read(b"another secret", &cursor).unwrap(), Err(ForeignCursor));
    }

    #[test]
    fn altered_truncated_and_made_up_cursors_are_refused() {
        let cursor = scope("").issue(SECRET, Position { v: 1, created_at: 5, id: 6 }).unwrap();
        let bad = [
            cursor[..cursor.len() - 1].to_owned(),
            cursor.replacen('.', "", 1),
            format!("{cursor}A"),
            "garbage".to_owned(),
            ".".to_owned(),
            format!("{}.{}", URL_SAFE_NO_PAD.encode(br#"{"v":1,"createdAt":9,"id":9}"#), "AAAA"),
        ];
        for text in bad {
            assert_eq!(scope("").read(SECRET, &text).unwrap(), Err(ForeignCursor), "{text}");
        }
        for i in 0..cursor.len() {
            let mut bytes = cursor.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let flipped = String::from_utf8(bytes).unwrap();
            assert_eq!(scope("").read(SECRET, &flipped).unwrap(), Err(ForeignCursor), "{flipped}");
        }
    }

    #[test]
    fn the_longest_cursor_fits_the_contracts_200_characters() {
        let scope =
            Scope { workspace_id: i64::MAX, project_id: i64::MAX, outcome: "skipped_already_in_sync" };
        let cursor = scope.issue(SECRET, Position { v: 1, created_at: i64::MIN, id: i64::MAX }).unwrap();
        assert!(cursor.len() <= 200, "{} characters", cursor.len());
    }
}
