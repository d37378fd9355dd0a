//! Rate limits (429 `rate_limited`), as the contract decides them.
//!
//! - Who counts: an authenticated request counts against its **user** (every token of the
//!   user shares one count, so refreshing does not reset it); `POST /v1/auth/refresh` and
//!   every request without a usable token count against the **client address** (the peer
//!   address, or, when the peer is one of `WPDS_TRUSTED_PROXIES`, the nearest address in
//!   `X-Forwarded-For` that is not one of them; an IPv6 address counts by its /64).
//! - How: fixed one-minute windows of `WPDS_RATE_LIMIT_PER_MINUTE` requests (0, the default,
//!   turns limiting off). On PostgreSQL the counters live in the database, so every
//!   instance sharing it counts the same requests; on SQLite (one instance) in memory.
//! - What the client sees: every limited operation's answer carries the `RateLimit-Policy`
//!   and `RateLimit` fields of [`DRAFT`] (`"per-user";q=100;w=60`,
//!   `"per-user";r=42;t=18`); beyond the limit, 429 with `Retry-After` (the window's end).
//! - Probes and the documents are never limited (they do not run through the pipeline).
//! - When the shared counters cannot be reached the request is let through and the log says
//!   so: a limiter must not turn a database hiccup into an outage of its own.

use actix_web::http::header::{HeaderMap, HeaderName};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The header a trusted proxy names the addresses it forwarded for in.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The revision of the IETF draft whose fields are sent.
pub const DRAFT: &str = "draft-ietf-httpapi-ratelimit-headers-09";
/// The window, in seconds.
pub const WINDOW_SECS: i64 = 60;
/// The most keys counted in memory in one window; beyond it new keys are let through
/// (and the log says so), so the counters' memory stays bounded.
const MAX_KEYS: usize = 100_000;

/// The `RateLimit-Policy` field's name.
pub const POLICY_HEADER: &str = "ratelimit-policy";
/// The `RateLimit` field's name.
pub const STANDING_HEADER: &str = "ratelimit";

/// What a request counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An authenticated user.
    User(i64),
    /// A client address (refresh, and requests without a usable token).
    Address(IpAddr),
}

impl Subject {
    /// The counter's key.
    pub fn key(&self) -> String {
        match self {
            Subject::User(id) => format!("user:{id}"),
            Subject::Address(IpAddr::V4(v4)) => format!("addr:{v4}"),
            Subject::Address(IpAddr::V6(v6)) => {
                let s = v6.segments();
                format!("addr:{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        }
    }

    /// The policy's name in the fields.
    fn policy(&self) -> &'static str {
        match self {
            Subject::User(_) => "per-user",
            Subject::Address(_) => "per-address",
        }
    }
}

/// A subject's standing in the current window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    policy: &'static str,
    limit: u32,
    hits: u64,
    /// Seconds until the window ends.
    pub reset: u32,
}

impl Standing {
    /// Whether this request is beyond the limit.
    pub fn exceeded(&self) -> bool {
        self.hits > u64::from(self.limit)
    }

    /// The `RateLimit-Policy` and `RateLimit` fields.
    pub fn headers(&self) -> [(&'static str, String); 2] {
        let remaining = u64::from(self.limit).saturating_sub(self.hits);
        [
            (POLICY_HEADER, format!("\"{}\";q={};w={WINDOW_SECS}", self.policy, self.limit)),
            (STANDING_HEADER, format!("\"{}\";r={remaining};t={}", self.policy, self.reset)),
        ]
    }
}

/// Where the counters live.
#[derive(Debug)]
enum Counters {
    /// In this process (one instance: SQLite).
    Memory(Mutex<Windows>),
    /// In the database, shared by every instance (PostgreSQL).
    Shared,
}

#[derive(Debug, Default)]
struct Windows {
    start: i64,
    hits: HashMap<String, u64>,
}

/// The limiter shared by every worker.
#[derive(Debug)]
pub struct RateLimiter {
    per_minute: u32,
    counters: Counters,
    trusted_proxies: Vec<IpAddr>,
    /// The window whose predecessors this process last deleted from the shared counters.
    swept: AtomicI64,
}

/// What to do for one request, from [`RateLimiter::prepare`].
#[derive(Debug)]
pub enum Count {
    /// Limiting is off.
    Off,
    /// Counted in memory: the standing is known.
    Known(Standing),
    /// To be counted in the shared store: add a hit for `key` in the window starting at
    /// `window_start` (deleting windows before `sweep_before` first, when set), then pass
    /// the total to [`RateLimiter::standing`].
    Shared {
        /// The counter's key.
        key: String,
        /// The current window's start, seconds since the epoch.
        window_start: i64,
        /// Delete windows that started before this, once per window per process.
        sweep_before: Option<i64>,
    },
}

impl RateLimiter {
    /// A limiter of `per_minute` requests per subject (0: off), counting in the database
    /// when `shared`, trusting `X-Forwarded-For` from `trusted_proxies`.
    pub fn new(per_minute: u32, shared: bool, trusted_proxies: Vec<IpAddr>) -> Self {
        let counters = if shared { Counters::Shared } else { Counters::Memory(Mutex::default()) };
        RateLimiter { per_minute, counters, trusted_proxies, swept: AtomicI64::new(0) }
    }

    /// Counts one request of `subject` now.
    pub fn prepare(&self, subject: &Subject) -> Count {
        if self.per_minute == 0 {
            return Count::Off;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let window_start = now - now.rem_euclid(WINDOW_SECS);
        match &self.counters {
            Counters::Shared => {
                let swept = self.swept.swap(window_start, Ordering::Relaxed);
                Count::Shared {
                    key: subject.key(),
                    window_start,
                    sweep_before: (swept != window_start).then_some(window_start),
                }
            }
            Counters::Memory(windows) => {
                let mut windows = windows.lock().unwrap_or_else(|p| p.into_inner());
                if windows.start != window_start {
                    windows.start = window_start;
                    windows.hits.clear();
                }
                let key = subject.key();
                if windows.hits.len() >= MAX_KEYS && !windows.hits.contains_key(&key) {
                    log::warn!("rate limiter: {MAX_KEYS} keys this window; letting {key} through uncounted");
                    return Count::Off;
                }
                let hits = windows.hits.entry(key).or_insert(0);
                *hits += 1;
                Count::Known(self.standing(subject, *hits, window_start))
            }
        }
    }

    /// The standing of `subject` after `hits` requests in the window starting at
    /// `window_start`.
    pub fn standing(&self, subject: &Subject, hits: u64, window_start: i64) -> Standing {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let reset = (window_start + WINDOW_SECS - now).clamp(1, WINDOW_SECS) as u32;
        Standing { policy: subject.policy(), limit: self.per_minute, hits, reset }
    }

    /// The address a request from `peer` counts against: the peer, or behind a trusted
    /// proxy the nearest address of its `X-Forwarded-For` fields (in `headers`, in the
    /// order received) that is not a trusted proxy. The headers are read only for a peer
    /// that is a trusted proxy (for any other, this is a comparison per trusted proxy).
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusted_proxies.contains(&peer) {
            return peer;
        }
        let forwarded = headers
            .get_all(X_FORWARDED_FOR)
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .collect::<Vec<_>>();
        forwarded.into_iter().rev().find(|a| !self.trusted_proxies.contains(a)).unwrap_or(peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_subject_in_memory_and_says_so_in_the_fields() {
        let limiter = RateLimiter::new(2, false, Vec::new());
        let user = Subject::User(5);
        let standings: Vec<Standing> = (0..3)
            .map(|_| match limiter.prepare(&user) {
                Count::Known(s) => s,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(standings.iter().map(Standing::exceeded).collect::<Vec<_>>(), [false, false, true]);
        let [(_, policy), (_, standing)] = standings[0].headers();
        assert_eq!(policy, "\"per-user\";q=2;w=60");
        assert!(standing.starts_with("\"per-user\";r=1;t="), "{standing}");
        assert!(matches!(limiter.prepare(&Subject::User(6)), Count::Known(s) if !s.exceeded()));
    }

    #[test]
    fn zero_means_off() {
        let limiter = RateLimiter::new(0, false, Vec::new());
        assert!((0..1000).all(|_| matches!(limiter.prepare(&Subject::User(1)), Count::Off)));
    }

    #[test]
    fn an_ipv6_client_counts_by_its_64_prefix() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert_eq!(Subject::Address(a).key(), Subject::Address(b).key());
    }
}
