//! Everything HTTP: the request pipeline of the contract's operations, the mapping of
//! errors to problem+json, request ids and access logs, and the operational endpoints.

pub mod auth;
pub mod auth_cache;
pub mod dispatch;
pub mod docs;
pub mod health;
pub mod problem;
pub mod rate_limit;
pub mod request_id;
pub mod security;
