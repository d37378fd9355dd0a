//! A short-lived in-process cache of who a token stands for and who belongs where, so the
//! 401 and 403 steps do not cost a database round trip on every request.
//!
//! Rules:
//! - Only positive answers about tokens are kept (an unknown token is looked up every time,
//!   so garbage tokens cannot fill the cache). Memberships are kept either way.
//! - An entry lives at most [`AuthCache::ttl`] and never past the access token's own
//!   `expires_at`, so expiry is exact and a revocation made elsewhere (another server
//!   process sharing the database, an operator) takes effect within the TTL.
//! - A revocation this process makes itself (refresh-token reuse) empties the cache at
//!   once: it is rare, and emptying cannot leave a revoked login behind.
//! - Each map holds at most [`MAX_ENTRIES`]; when full, expired entries go first, and if
//!   that is not enough the map is emptied (a burst of lookups refills it).
//! - A TTL of zero turns the cache off.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;
use std::time::{Duration, Instant};
use wpds_storage::clock::now_millis;
use wpds_storage::repos::auth::Caller;

/// The most entries each map holds.
pub const MAX_ENTRIES: usize = 65_536;

/// Cached authentication and membership answers.
#[derive(Debug)]
pub struct AuthCache {
    ttl: Duration,
    callers: RwLock<HashMap<String, (Caller, Instant)>>,
    members: RwLock<HashMap<(i64, i64), (bool, Instant)>>,
}

impl AuthCache {
    /// A cache whose entries live at most `ttl` (zero: nothing is cached).
    pub fn new(ttl: Duration) -> Self {
        AuthCache { ttl, callers: RwLock::default(), members: RwLock::default() }
    }

    /// How long an answer may be served from the cache.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The caller `token` stood for when it was last looked up, if that is recent and the
    /// token has not expired since.
    pub fn caller(&self, token: &str) -> Option<Caller> {
        self.caller_at(token, Instant::now())
    }

    /// [`AuthCache::caller`] as of `now`.
    fn caller_at(&self, token: &str, now: Instant) -> Option<Caller> {
        let caller = fresh(&self.callers, token, now)?;
        (caller.expires_at > now_millis()).then_some(caller)
    }

    /// Remembers that `token` stands for `caller`.
    pub fn remember_caller(&self, token: &str, caller: Caller) {
        self.remember_caller_at(token, caller, Instant::now());
    }

    /// [`AuthCache::remember_caller`] as of `now`.
    fn remember_caller_at(&self, token: &str, caller: Caller, now: Instant) {
        store(&self.callers, self.ttl, token.to_owned(), caller, now);
    }

    /// Whether `user_id` was a member of `workspace_id` when last looked up, if recent.
    pub fn membership(&self, workspace_id: i64, user_id: i64) -> Option<bool> {
        fresh(&self.members, &(workspace_id, user_id), Instant::now())
    }

    /// Remembers whether `user_id` is a member of `workspace_id`.
    pub fn remember_membership(&self, workspace_id: i64, user_id: i64, member: bool) {
        store(&self.members, self.ttl, (workspace_id, user_id), member, Instant::now());
    }

    /// Forgets everything (after this process revoked a login).
    pub fn clear(&self) {
        write(&self.callers).clear();
        write(&self.members).clear();
    }
}

/// The value under `key` if it was stored less than the TTL before `now`.
fn fresh<K, Q, V>(map: &RwLock<HashMap<K, (V, Instant)>>, key: &Q, now: Instant) -> Option<V>
where
    K: Eq + Hash + std::borrow::Borrow<Q>,
    Q: Eq + Hash + ?Sized,
    V: Clone,
{
    let map = map.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (value, until) = map.get(key)?;
    (now < *until).then(|| value.clone())
}

/// Stores `value` under `key` as of `now`, to be served for `ttl`.
fn store<K: Eq + Hash, V>(
    map: &RwLock<HashMap<K, (V, Instant)>>,
    ttl: Duration,
    key: K,
    value: V,
    now: Instant,
) {
    if ttl.is_zero() {
        return;
    }
    let mut map = write(map);
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, (_, until)| *until > now);
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
    }
    map.insert(key, (value, now + ttl));
}

/// A poisoned lock only means another thread panicked mid-insert; the map is still usable.
fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(expires_at: i64) -> Caller {
        Caller { user_id: 5, is_platform_admin: false, expires_at }
    }

    #[test]
    fn a_remembered_caller_is_served_until_the_ttl_ends() {
        // The lookups' instants are given, not waited for: a busy machine's pauses cannot
        // move them.
        let ttl = Duration::from_millis(50);
        let cache = AuthCache::new(ttl);
        let stored = Instant::now();
        cache.remember_caller_at("t", caller(now_millis() + 60_000), stored);
        assert_eq!(cache.caller_at("t", stored).map(|c| c.user_id), Some(5));
        let last = stored + ttl - Duration::from_nanos(1);
        assert_eq!(cache.caller_at("t", last).map(|c| c.user_id), Some(5));
        assert_eq!(cache.caller_at("t", stored + ttl), None);
    }

    #[test]
    fn an_expired_token_is_never_served_from_the_cache() {
        let cache = AuthCache::new(Duration::from_secs(60));
        cache.remember_caller("t", caller(now_millis() - 1));
        assert_eq!(cache.caller("t"), None);
    }

    #[test]
    fn a_zero_ttl_caches_nothing_and_clear_forgets_everything() {
        let off = AuthCache::new(Duration::ZERO);
        off.remember_membership(1, 5, true);
        assert_eq!(off.membership(1, 5), None);

        let on = AuthCache::new(Duration::from_secs(60));
        on.remember_membership(1, 5, false);
        on.remember_caller("t", caller(now_millis() + 60_000));
        assert_eq!(on.membership(1, 5), Some(false));
        on.clear();
        assert_eq!((on.membership(1, 5), on.caller("t")), (None, None));
    }
}
