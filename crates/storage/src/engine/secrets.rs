//! Secrets the server keeps for itself in `server_secrets`, one row per purpose (today the
//! receipts cursor's signing key, [`CURSOR_SIGNING`]).
//!
//! Every secret is provisioned when the database is migrated ([`provision`], called by
//! [`crate::engine::db::Database::migrate`], so at every start-up and by `wpds migrate`): 32 random
//! bytes written with `INSERT … ON CONFLICT DO NOTHING`, so the first process to migrate a
//! database chooses the value and every process sharing it signs and verifies with the
//! same key. Requests only read them ([`read`]): no read path writes, so on SQLite a
//! listing never competes with the writer thread for the write lock.

use crate::db_run;
use crate::engine::conn::DbConn;
use crate::error::StoreError;
use crate::schema::server_secrets;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::prelude::*;

/// The name of the receipts cursor's signing key.
pub const CURSOR_SIGNING: &str = "commercial_receipts_cursor";

/// Every secret the server uses.
const ALL: [&str; 1] = [CURSOR_SIGNING];

/// Creates each secret that does not exist yet (32 random bytes, base64url); one that
/// exists is kept.
pub fn provision(conn: &mut DbConn) -> Result<(), StoreError> {
    for name in ALL {
        let fresh = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
        db_run!(conn => diesel::insert_into(server_secrets::table)
            .values((server_secrets::name.eq(name), server_secrets::value.eq(&fresh)))
            .on_conflict_do_nothing()
            .execute(conn))?;
    }
    Ok(())
}

/// The secret `name`, as bytes. `Internal` when it is missing (the database was not
/// migrated by this version) or not base64url.
pub fn read(conn: &mut DbConn, name: &str) -> Result<Vec<u8>, StoreError> {
    let stored: Option<String> = db_run!(conn => server_secrets::table
        .find(name)
        .select(server_secrets::value)
        .first(conn)
        .optional())?;
    let stored = stored.ok_or_else(|| {
        StoreError::Internal(format!("the secret {name} is missing: migrate the database (`wpds migrate`)"))
    })?;
    URL_SAFE_NO_PAD
        .decode(stored)
        .map_err(|e| StoreError::Internal(format!("the stored secret {name} is not base64url: {e}")))
}
