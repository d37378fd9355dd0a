//! The repositories: one module per aggregate of the specification, each holding the SQL
//! of its records (written once with diesel, compiled for both engines by the engine's
//! macros) and returning its work as a [`crate::engine::Read`] or
//! [`crate::engine::Write`], which the caller hands to [`crate::engine::Database`].
//! Callers get contract types or plain values, never a row or a connection. A repository
//! reaches the engine only through [`crate::engine`]'s entry points.

pub mod auth;
pub mod catalog;
pub mod categories;
pub mod companies;
pub mod contacts;
pub mod credits;
pub mod documents;
pub mod exports;
pub mod imports;
pub(crate) mod locks;
pub mod rate_limits;
pub mod receipts;
pub(crate) mod takeoff;
pub mod time_log;
pub mod workspaces;
