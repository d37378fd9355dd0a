//! The bundled demo workspace (`serve --demo`): its fixture, the users whose tokens the
//! banner prints, how it is loaded, and its [`tokens`].
//!
//! Loading is part of building the application ([`crate::app::Application::build`]), so
//! no request meets the database before the demo is in it; printing the banner is the
//! command line's (`src/main.rs`).

pub mod tokens;

use wpds_storage::seed::{self, SeedReport};
use wpds_storage::{Database, repos::workspaces};

/// The demo workspace (`fixtures/demo.json`).
pub const FIXTURE: &str = include_str!("../../fixtures/demo.json");

/// The demo's workspace member (user 5) whose access token the banner prints.
pub const MEMBER: i64 = 5;

/// The demo's platform administrator (user 9) whose access token the banner prints.
pub const ADMIN: i64 = 9;

/// Access-token lifetime of `serve --demo`, seconds: a person exploring is not cut off
/// after the production default of 15 minutes.
pub const ACCESS_TOKEN_TTL: u64 = 24 * 60 * 60;

/// What `--demo` did to the database.
#[derive(Debug)]
pub enum Loaded {
    /// The database was empty: the demo workspace was loaded.
    Loaded(SeedReport),
    /// `--reset`: the demo workspace replaced what the demo had left.
    Reloaded(SeedReport),
    /// The database held records already: nothing was loaded.
    Kept,
}

/// Loads the demo workspace into `db` when it is empty, or again with `reset` (refused,
/// changing nothing, when the database holds records the demo does not have).
pub fn load(db: &Database, reset: bool) -> Result<Loaded, String> {
    let failed = |e: seed::SeedError| format!("demo fixture: {e}");
    if reset {
        return seed::reload(db, FIXTURE).map(Loaded::Reloaded).map_err(failed);
    }
    if db.read_now(workspaces::count()).map_err(|e| e.to_string())? == 0 {
        return seed::load(db, FIXTURE).map(Loaded::Loaded).map_err(failed);
    }
    Ok(Loaded::Kept)
}
