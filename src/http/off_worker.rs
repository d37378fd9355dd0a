//! Checking a large body against the document off the worker threads that read request
//! heads.
//!
//! An actix-web worker reads the request heads of all its connections and runs their
//! pipelines; while it parses and checks a body, it reads no head. A 1 MiB body takes a
//! debug build about 0.3 s of CPU, so under a flood of such bodies, with a build beside it,
//! a liveness probe's head once waited past the head timeout and was answered 408. A body
//! longer than [`OFF_WORKER_BYTES`] is therefore checked on a pool of threads of its own,
//! at most one per core at once (the rest wait their turn, already counted in the body
//! memory budget, `src/http/body.rs`); the worker awaits the check and serves its other
//! connections meanwhile. Shorter bodies, nearly every request, are checked in place:
//! handing them over would cost more than checking them.

use crate::error::ApiError;
use std::io;

/// The length past which a body is checked off the workers.
pub const OFF_WORKER_BYTES: usize = 64 * 1024;

/// The pool that checks large bodies: a runtime whose blocking threads, at most one per
/// core, run the checks. Registered as app data by `src/server.rs`.
pub struct OffWorker {
    /// `Some` until dropped: a runtime must be shut down without blocking when it is
    /// dropped inside another runtime's thread (an actix worker's).
    runtime: Option<tokio::runtime::Runtime>,
}

impl OffWorker {
    /// A pool of at most `threads` checks at once (at least one).
    pub fn new(threads: usize) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(threads.max(1))
            .thread_name("wpds-large-body")
            .build()?;
        Ok(OffWorker { runtime: Some(runtime) })
    }

    /// Runs `check` on the pool and awaits its result (the caller's thread stays free); a
    /// check that panicked is an internal error, as it would be in place.
    pub async fn run<T: Send + 'static>(
        &self,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| ApiError::Internal("the large-body pool is shut down".to_owned()))?;
        runtime
            .spawn_blocking(check)
            .await
            .map_err(|e| ApiError::Internal(format!("checking a large body failed: {e}")))
    }
}

impl Drop for OffWorker {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
