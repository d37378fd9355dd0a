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
use wpds_storage::auth::Caller;
use wpds_storage::clock::now_millis;

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
        let caller = fresh(&self.callers, token)?;
        (caller.expires_at > now_millis()).then_some(caller)
    }

    /// Remembers that `token` stands for `caller`.
    pub fn remember_caller(&self, token: &str, caller: Caller) {
        store(&self.callers, self.ttl, token.to_owned(), caller);
    }

    /// Whether `user_id` was a member of `workspace_id` when last looked up, if recent.
    pub fn membership(&self, workspace_id: i64, user_id: i64) -> Option<bool> {
        fresh(&self.members, &(workspace_id, user_id))
    }

    /// Remembers whether `user_id` is a member of `workspace_id`.
    pub fn remember_membership(&self, workspace_id: i64, user_id: i64, member: bool) {
        store(&self.members, self.ttl, (workspace_id, user_id), member);
    }

    /// Forgets everything (after this process revoked a login).
    pub fn clear(&self) {
        write(&self.callers).clear();
        write(&self.members).clear();
    }
}

/// The value under `key` if it was stored less than the TTL ago.
fn fresh<K, Q, V>(map: &RwLock<HashMap<K, (V, Instant)>>, key: &Q) -> Option<V>
where
    K: Eq + Hash + std::borrow::Borrow<Q>,
    Q: Eq + Hash + ?Sized,
    V: Clone,
{
    let map = map.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (value, until) = map.get(key)?;
    (Instant::now() < *until).then(|| value.clone())
}

fn store<K: Eq + Hash, V>(map: &RwLock<HashMap<K, (V, Instant)>>, ttl: Duration, key: K, value: V) {
    if ttl.is_zero() {
        return;
    }
    let now = Instant::now();
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
        let cache = AuthCache::new(Duration::from_millis(50));
        cache.remember_caller("t", caller(now_millis() + 60_000));
        assert_eq!(cache.caller("t").map(|c| c.user_id), Some(5));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.caller("t"), None);
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
