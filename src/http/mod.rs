//! Everything HTTP: the request pipeline of the contract's operations, the mapping of
//! errors to problem+json, request ids and access logs, and the operational endpoints.

pub mod access_log;
pub mod auth;
pub mod body;
pub mod compress;
pub mod conformance;
pub mod cors;
pub mod dispatch;
pub mod docs;
pub mod edge;
pub mod endpoint;
pub mod health;
pub mod off_worker;
pub mod operation;
pub mod problem;
pub mod request_id;
pub mod security;
