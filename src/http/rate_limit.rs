//! Per-token rate limiting (429 `rate_limited` with `Retry-After`).
//!
//! Each access token gets a token bucket holding `per_minute` requests, refilled
//! continuously at `per_minute / 60` per second. Off (no limit) when `per_minute` is 0,
//! the default. Buckets live in this process only: with several server instances each
//! enforces its own share. Idle full buckets are dropped so memory stays bounded.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Buckets kept before idle ones are swept.
const SWEEP_AT: usize = 10_000;

/// The limiter shared by every worker.
#[derive(Debug)]
pub struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    by_token: HashMap<String, Bucket>,
    /// Size at which idle buckets are next swept; doubles when a sweep frees little, so a
    /// map full of busy tokens is not swept on every request.
    sweep_at: usize,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    available: f64,
    updated: Instant,
}

impl RateLimiter {
    /// A limiter allowing `per_minute` requests per token; 0 turns limiting off.
    pub fn new(per_minute: u32) -> Self {
        RateLimiter {
            per_minute,
            buckets: Mutex::new(Buckets { by_token: HashMap::new(), sweep_at: SWEEP_AT }),
        }
    }

    /// Takes one request from `token`'s bucket, or answers how many whole seconds to wait.
    pub fn take(&self, token: &str) -> Result<(), u32> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let now = Instant::now();
        let mut guard = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let buckets = &mut *guard;
        if buckets.by_token.len() >= buckets.sweep_at {
            buckets.by_token.retain(|_, b| {
                b.available + now.duration_since(b.updated).as_secs_f64() * per_second < capacity
            });
            buckets.sweep_at = (buckets.by_token.len() * 2).max(SWEEP_AT);
        }
        let bucket =
            buckets.by_token.entry(token.to_owned()).or_insert(Bucket { available: capacity, updated: now });
        bucket.available =
            (bucket.available + now.duration_since(bucket.updated).as_secs_f64() * per_second).min(capacity);
        bucket.updated = now;
        if bucket.available >= 1.0 {
            bucket.available -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.available) / per_second).ceil().max(1.0) as u32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_the_burst_then_asks_to_wait() {
        let limiter = RateLimiter::new(3);
        assert_eq!((limiter.take("a"), limiter.take("a"), limiter.take("a")), (Ok(()), Ok(()), Ok(())));
        let wait = limiter.take("a").unwrap_err();
        assert!((1..=20).contains(&wait), "{wait}");
        assert_eq!(limiter.take("b"), Ok(()), "buckets are per token");
    }

    #[test]
    fn zero_means_off() {
        let limiter = RateLimiter::new(0);
        assert!((0..10_000).all(|_| limiter.take("a").is_ok()));
    }
}
