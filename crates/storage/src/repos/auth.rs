//! Logins, access and refresh tokens, memberships and the audit log.
//!
//! Tokens are opaque random strings of 256 bits (`at_…` access, `rt_…` refresh); only
//! their SHA-256 hashes are stored. A login is one chain of token pairs: refreshing spends
//! the refresh token and issues a new pair on the same login; presenting a spent refresh
//! token again revokes the whole login (reuse detection).
//!
//! The two reads every request makes when the server's authentication cache does not know
//! the answer, the caller of a token and a membership, are batched statements
//! (`CallersOfTokens`, `Memberships`): on PostgreSQL the lookups waiting at the same
//! moment are one statement (`= ANY($1)` over their keys), on SQLite each runs alone.

use crate::clock::now_millis;
use crate::engine::{BatchedStatement, DbConn, Read, StatementConn, StatementFuture, Write};
use crate::error::StoreError;
use crate::schema::{audit_log, logins, memberships, tokens, users};
use crate::{db_statement, db_write};
use base64::Engine as _;
use diesel::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// Token lifetimes (the server's settings `WPDS_ACCESS_TOKEN_TTL` and
/// `WPDS_REFRESH_TOKEN_TTL` state their defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLifetimes {
    /// Access tokens.
    pub access: Duration,
    /// Refresh tokens.
    pub refresh: Duration,
}

/// A freshly issued pair, in clear text: shown once, never stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuedPair {
    /// The access token.
    pub access_token: String,
    /// The refresh token.
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// Seconds until the refresh token expires.
    pub refresh_expires_in: i64,
}

/// Who a valid access token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The user.
    pub user_id: i64,
    /// Whether the user is a platform administrator.
    pub is_platform_admin: bool,
    /// When the access token expires (ms since the epoch).
    pub expires_at: i64,
}

/// Why a refresh was refused; every reason answers the same `invalid_grant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshRefusal {
    /// No such refresh token.
    Unknown,
    /// Past its lifetime.
    Expired,
    /// Its login was revoked.
    Revoked,
    /// Spent before: the whole login has now been revoked.
    Reused,
}

/// A refresh token as stored: id, login, expiry, when spent, when its login was revoked.
type RefreshRow = (i64, i64, i64, Option<i64>, Option<i64>);

const ACCESS: &str = "access";
const REFRESH: &str = "refresh";

/// SHA-256 of a token, hex: the only form stored.
pub(crate) fn hash_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn mint(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Stores the hashes of a new pair on `login` (inside the caller's transaction; a macro so
/// the one body serves both engines' connections).
macro_rules! insert_pair {
    ($conn:ident, $login:expr, $pair:expr, $now:expr, $lifetimes:expr) => {
        for (kind, token, ttl) in [
            (ACCESS, &$pair.access_token, $lifetimes.access),
            (REFRESH, &$pair.refresh_token, $lifetimes.refresh),
        ] {
            diesel::insert_into(tokens::table)
                .values((
                    tokens::login_id.eq($login),
                    tokens::kind.eq(kind),
                    tokens::token_hash.eq(hash_token(token)),
                    tokens::expires_at.eq($now + ttl.as_millis() as i64),
                    tokens::created_at.eq($now),
                ))
                .execute($conn)?;
        }
    };
}

/// Starts a login for `user_id` and issues its first pair (`wpds token issue`).
pub fn issue(user_id: i64, lifetimes: TokenLifetimes) -> Write<IssuedPair> {
    Write::new("SELECT users INSERT logins INSERT tokens", move |conn| {
        db_write!(conn => {
            let exists: i64 = users::table.filter(users::id.eq(user_id)).count().get_result(conn)?;
            if exists == 0 {
                return Err(StoreError::NotFound(format!("user {user_id}")));
            }
            let now = now_millis();
            let login: i64 = diesel::insert_into(logins::table)
                .values((logins::user_id.eq(user_id), logins::created_at.eq(now)))
                .returning(logins::id)
                .get_result(conn)?;
            let pair = new_pair(lifetimes);
            insert_pair!(conn, login, &pair, now, lifetimes);
            Ok(pair)
        })
    })
}

fn new_pair(lifetimes: TokenLifetimes) -> IssuedPair {
    IssuedPair {
        access_token: mint("at_"),
        refresh_token: mint("rt_"),
        token_type: "Bearer",
        expires_in: lifetimes.access.as_secs() as i64,
        refresh_expires_in: lifetimes.refresh.as_secs() as i64,
    }
}

/// The caller an access token stands for, if it is known, unexpired and its login is not
/// revoked. One statement, batched with the lookups waiting at the same moment
/// (`CallersOfTokens`).
pub fn authenticate(access_token: String) -> Read<Option<Caller>> {
    Read::batched::<CallersOfTokens>("SELECT tokens logins users", hash_token(&access_token))
}

/// The callers of access tokens, by the tokens' hashes, as a batched read
/// ([`crate::engine::BatchedStatement`]): for several, one statement over the hashes
/// (`token_hash = ANY($1)`); for one, the statement for it alone. A hash asked twice in a
/// batch is answered to each. Every lookup is settled: `None` is an unknown, expired or
/// revoked token.
#[derive(Debug)]
pub(crate) struct CallersOfTokens;

impl BatchedStatement for CallersOfTokens {
    const WRITES: bool = false;
    /// The token's hash ([`hash_token`]).
    type Input = String;
    type Key = String;
    type Output = Option<Caller>;

    fn key(hash: &String) -> Option<String> {
        Some(hash.clone())
    }

    fn many<'c>(
        conn: StatementConn<'c>,
        hashes: &'c [String],
    ) -> StatementFuture<'c, Vec<Option<Self::Output>>> {
        Box::pin(async move {
            let now = now_millis();
            let found = db_statement!(
                conn,
                live_access_tokens(now).filter(tokens::token_hash.eq_any(hashes)).select((
                    tokens::token_hash,
                    users::id,
                    users::is_platform_admin,
                    tokens::expires_at
                )),
                load::<(String, i64, bool, i64)>
            )?;
            let callers: HashMap<String, Caller> = found
                .into_iter()
                .map(|(hash, user_id, is_platform_admin, expires_at)| {
                    (hash, Caller { user_id, is_platform_admin, expires_at })
                })
                .collect();
            Ok(hashes.iter().map(|hash| Some(callers.get(hash).cloned())).collect())
        })
    }

    fn one<'c>(conn: StatementConn<'c>, hash: &'c String) -> StatementFuture<'c, Option<Self::Output>> {
        Box::pin(async move { Ok(Some(caller_of(conn, hash).await?)) })
    }
}

/// The access tokens usable at `now` (unexpired, their login not revoked), joined to their
/// logins and users: what both lookups of a token's caller ask of, by one hash or several.
#[diesel::dsl::auto_type]
fn live_access_tokens(now: i64) -> _ {
    let access: &'static str = ACCESS;
    tokens::table
        .inner_join(logins::table)
        .inner_join(users::table.on(users::id.eq(logins::user_id)))
        .filter(tokens::kind.eq(access))
        .filter(tokens::expires_at.gt(now))
        .filter(logins::revoked_at.is_null())
}

/// The caller of the access token whose hash is `hash`, on `conn`.
async fn caller_of(conn: StatementConn<'_>, hash: &str) -> Result<Option<Caller>, StoreError> {
    let now = now_millis();
    let found = db_statement!(
        conn,
        live_access_tokens(now).filter(tokens::token_hash.eq(hash)).select((
            users::id,
            users::is_platform_admin,
            tokens::expires_at
        )),
        first::<(i64, bool, i64)>
    )
    .optional()?;
    Ok(found.map(|(user_id, is_platform_admin, expires_at)| Caller {
        user_id,
        is_platform_admin,
        expires_at,
    }))
}

/// Spends `refresh_token` and issues the next pair on the same login.
///
/// A spent token presented again revokes the login in the same transaction (which then
/// commits) and is refused like any other unusable token.
pub fn refresh(
    refresh_token: String,
    lifetimes: TokenLifetimes,
) -> Write<Result<IssuedPair, RefreshRefusal>> {
    Write::new("SELECT tokens logins UPDATE tokens INSERT tokens", move |conn| {
        refresh_on(conn, &refresh_token, lifetimes)
    })
}

/// [`refresh`] on `conn`.
fn refresh_on(
    conn: &mut DbConn,
    refresh_token: &str,
    lifetimes: TokenLifetimes,
) -> Result<Result<IssuedPair, RefreshRefusal>, StoreError> {
    let hash = hash_token(refresh_token);
    db_write!(conn => {
        let now = now_millis();
        let found: Option<RefreshRow> = tokens::table
            .inner_join(logins::table)
            .filter(tokens::token_hash.eq(&hash))
            .filter(tokens::kind.eq(REFRESH))
            .select((tokens::id, tokens::login_id, tokens::expires_at, tokens::spent_at, logins::revoked_at))
            .first(conn)
            .optional()?;
        let Some((token_id, login, expires_at, spent_at, revoked_at)) = found else {
            return Ok(Err(RefreshRefusal::Unknown));
        };
        if revoked_at.is_some() {
            return Ok(Err(RefreshRefusal::Revoked));
        }
        if spent_at.is_none() && expires_at <= now {
            return Ok(Err(RefreshRefusal::Expired));
        }
        // Spend it; zero rows means it was spent before (or by a concurrent refresh).
        let spent_now = diesel::update(tokens::table.filter(tokens::id.eq(token_id)).filter(tokens::spent_at.is_null()))
            .set(tokens::spent_at.eq(now))
            .execute(conn)?;
        if spent_now == 0 {
            diesel::update(logins::table.filter(logins::id.eq(login)))
                .set(logins::revoked_at.eq(now))
                .execute(conn)?;
            return Ok(Err(RefreshRefusal::Reused));
        }
        let pair = new_pair(lifetimes);
        insert_pair!(conn, login, &pair, now, lifetimes);
        Ok(Ok(pair))
    })
}

/// Which logins [`revoke`] ends: the one a token (access or refresh, of any age) belongs
/// to, or every login of a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoke {
    /// The login of this token (a leaked one: the whole chain of pairs it belongs to).
    LoginOf(String),
    /// Every login of this user.
    User(i64),
}

/// A login [`revoke`] ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokedLogin {
    /// The login.
    pub login_id: i64,
    /// Its user.
    pub user_id: i64,
    /// When it began, milliseconds since the epoch.
    pub created_at: i64,
}

/// Ends the logins `what` names that are not ended yet, so none of their tokens
/// authenticates or refreshes again (a refresh answers `invalid_grant`); returns them,
/// oldest first (empty when there were none left to end). `NotFound` for a token no login
/// has, or a user who does not exist. Another server's authentication cache may still
/// serve a revoked access token for up to its bound (`WPDS_AUTH_CACHE_TTL_MS`).
pub fn revoke(what: Revoke) -> Write<Vec<RevokedLogin>> {
    Write::new("SELECT logins UPDATE logins", move |conn| {
        db_write!(conn => {
            let now = now_millis();
            let live = logins::table.filter(logins::revoked_at.is_null()).into_boxed();
            let live = match &what {
                Revoke::LoginOf(token) => {
                    let login: Option<i64> = tokens::table
                        .filter(tokens::token_hash.eq(hash_token(token)))
                        .select(tokens::login_id)
                        .first(conn)
                        .optional()?;
                    let login = login.ok_or_else(|| StoreError::NotFound("a login with this token".to_owned()))?;
                    live.filter(logins::id.eq(login))
                }
                Revoke::User(user) => {
                    let exists: i64 = users::table.filter(users::id.eq(user)).count().get_result(conn)?;
                    if exists == 0 {
                        return Err(StoreError::NotFound(format!("user {user}")));
                    }
                    live.filter(logins::user_id.eq(user))
                }
            };
            let ended: Vec<(i64, i64, i64)> = live
                .select((logins::id, logins::user_id, logins::created_at))
                .order(logins::id)
                .load(conn)?;
            let ids: Vec<i64> = ended.iter().map(|(id, ..)| *id).collect();
            diesel::update(logins::table.filter(logins::id.eq_any(&ids)).filter(logins::revoked_at.is_null()))
                .set(logins::revoked_at.eq(now))
                .execute(conn)?;
            Ok(ended
                .into_iter()
                .map(|(login_id, user_id, created_at)| RevokedLogin { login_id, user_id, created_at })
                .collect())
        })
    })
}

/// Whether `user_id` is a member of workspace `workspace_id`. One statement, batched with
/// the checks waiting at the same moment (`Memberships`).
pub fn is_member(workspace_id: i64, user_id: i64) -> Read<bool> {
    Read::batched::<Memberships>("SELECT memberships", (workspace_id, user_id))
}

/// Whether users are members of workspaces, by (workspace, user), as a batched read
/// ([`crate::engine::BatchedStatement`]): for several, one statement over the batch's
/// workspaces and users (`workspace_id = ANY($1) AND user_id = ANY($2)`, an index scan of
/// the primary key), whose rows are the memberships among them (at most one per workspace
/// and user of the batch, [`crate::engine::MAX_BATCH`] of each), each check answered from
/// them; for one, the statement for it alone. Every check is settled.
#[derive(Debug)]
pub(crate) struct Memberships;

impl BatchedStatement for Memberships {
    const WRITES: bool = false;
    /// The workspace and the user.
    type Input = (i64, i64);
    type Key = (i64, i64);
    type Output = bool;

    fn key(pair: &(i64, i64)) -> Option<(i64, i64)> {
        Some(*pair)
    }

    fn many<'c>(conn: StatementConn<'c>, pairs: &'c [(i64, i64)]) -> StatementFuture<'c, Vec<Option<bool>>> {
        Box::pin(async move {
            let workspaces: Vec<i64> =
                pairs.iter().map(|(w, _)| *w).collect::<BTreeSet<_>>().into_iter().collect();
            let members: Vec<i64> =
                pairs.iter().map(|(_, u)| *u).collect::<BTreeSet<_>>().into_iter().collect();
            let found = db_statement!(
                conn,
                memberships::table
                    .filter(memberships::workspace_id.eq_any(&workspaces))
                    .filter(memberships::user_id.eq_any(&members))
                    .select((memberships::workspace_id, memberships::user_id)),
                load::<(i64, i64)>
            )?;
            let found: BTreeSet<(i64, i64)> = found.into_iter().collect();
            Ok(pairs.iter().map(|pair| Some(found.contains(pair))).collect())
        })
    }

    fn one<'c>(
        conn: StatementConn<'c>,
        &(workspace, user): &'c (i64, i64),
    ) -> StatementFuture<'c, Option<bool>> {
        Box::pin(async move { Ok(Some(is_member_on(conn, workspace, user).await?)) })
    }
}

/// [`is_member`] on `conn`.
async fn is_member_on(conn: StatementConn<'_>, workspace_id: i64, user_id: i64) -> Result<bool, StoreError> {
    let count = db_statement!(
        conn,
        memberships::table
            .filter(memberships::workspace_id.eq(workspace_id))
            .filter(memberships::user_id.eq(user_id))
            .count(),
        get_result::<i64>
    )?;
    Ok(count > 0)
}

/// One administrative action, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditEntry<'a> {
    /// Who acted.
    pub actor_user_id: i64,
    /// What was done (`retire_global_company`, …).
    pub action: &'a str,
    /// What it was done to (`global_company:204`).
    pub target: String,
    /// The reason given.
    pub reason: &'a str,
    /// Anything else worth keeping, as JSON.
    pub detail: serde_json::Value,
}

/// Records an administrative call that the operation's rules refused (not found, a state
/// conflict, a broken rule), in a transaction of its own since the call's own transaction
/// rolled back: every administrative call leaves an entry, with `detail.refused` naming the
/// outcome. Failures of the database itself are not recorded (it could not take them).
pub(crate) fn record_refused(
    conn: &mut DbConn,
    entry: AuditEntry<'_>,
    error: &StoreError,
) -> Result<(), StoreError> {
    let refused = match error {
        StoreError::NotFound(_) => "not_found",
        StoreError::State(conflict) => conflict.refusal.as_str(),
        StoreError::Rule(violations) => violations.first().map_or("unprocessable", |v| v.code),
        StoreError::VersionConflict(_) => "version_conflict",
        StoreError::IdempotencyKeyReused(_) => "idempotency_key_reused",
        StoreError::Unavailable(_) | StoreError::Internal(_) => return Ok(()),
    };
    let entry = AuditEntry { detail: serde_json::json!({ "refused": refused }), ..entry };
    db_write!(conn => conn.record_audit(&entry))
}

/// Writing the audit log on a connection already inside the caller's transaction, so the
/// entry commits or rolls back with the action it records.
pub(crate) trait AuditLog {
    /// Appends `entry`.
    fn record_audit(&mut self, entry: &AuditEntry<'_>) -> Result<(), StoreError>;
}

macro_rules! impl_audit_log {
    ($($connection:ty),*) => {$(
        impl AuditLog for $connection {
            fn record_audit(&mut self, entry: &AuditEntry<'_>) -> Result<(), StoreError> {
                diesel::insert_into(audit_log::table)
                    .values((
                        audit_log::actor_user_id.eq(entry.actor_user_id),
                        audit_log::action.eq(entry.action),
                        audit_log::target.eq(entry.target.as_str()),
                        audit_log::reason.eq(entry.reason),
                        audit_log::detail.eq(entry.detail.to_string()),
                        audit_log::created_at.eq(now_millis()),
                    ))
                    .execute(self)?;
                Ok(())
            }
        }
    )*};
}

impl_audit_log!(diesel::sqlite::SqliteConnection, diesel::pg::PgConnection);
