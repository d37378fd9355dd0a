//! Whether a database connection failed recently: then the others are verified before
//! use, so that the connections of an outage are found and replaced rather than handed to
//! requests. Shared by the blocking pool ([`crate::engine::db`]) and the shared PostgreSQL
//! connections ([`crate::engine::shared_pg`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long after a connection failed checkouts verify connections first: long enough for
/// every connection that died in the same outage to be found and replaced.
const SUSPECT_FOR: Duration = Duration::from_secs(30);

/// Whether a connection failed recently, so that the others are verified before use: the
/// blocking pool verifies every checkout for [`SUSPECT_FOR`]; a shared connection
/// ([`crate::engine::shared_pg`]) made before the failure is verified once, at its next use (the
/// failure's `generation`).
#[derive(Default)]
pub(crate) struct Suspicion {
    until: std::sync::Mutex<Option<Instant>>,
    generation: AtomicU64,
}

impl Suspicion {
    /// A connection failed.
    pub(crate) fn mark(&self) {
        *self.until.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + SUSPECT_FOR);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// How many failures there have been.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Whether a connection failed within the last [`SUSPECT_FOR`].
    pub(crate) fn is_suspect(&self) -> bool {
        let mut until = self.until.lock().unwrap_or_else(|p| p.into_inner());
        match *until {
            Some(at) if at > Instant::now() => true,
            Some(_) => {
                *until = None;
                false
            }
            None => false,
        }
    }
}
