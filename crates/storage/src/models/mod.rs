//! One row struct per table, as the table holds it: the repositories read and write
//! these, and the seed loader builds them from a fixture file (`seed::plan`).
//!
//! One file per table, named after the record (`documents` → [`document`]). Ids and
//! timestamps are `i64` (ms since the epoch), JSON sub-objects text, exactly as
//! [`crate::schema`] declares the columns. A repository whose hot path reads fewer
//! columns keeps that narrower read struct in the table's file, named for what it is
//! ([`ListedReceiptRow`], [`TimeLogCellRow`]). The structs stay inside this crate: callers get
//! contract types or plain values.
//!
//! Every table the seed loader fills has its model. The service's own bookkeeping tables
//! (`logins`, `tokens`, `audit_log`, `report_exports`, `credit_resets`, `server_secrets`,
//! `rate_limit_windows`) have none: their repositories only ever insert and read a few
//! named columns, so no row of theirs is declared anywhere.

pub mod assistant_import;
pub mod catalog_family;
pub mod category;
pub mod commercial_receipt;
pub mod company_link;
pub mod contact_company;
pub mod contact_person;
pub mod credit_allowance;
pub mod document;
pub mod document_type;
pub mod global_company;
pub mod item_column;
pub mod membership;
pub mod product_type;
pub mod product_type_column;
pub mod project;
pub mod project_area;
pub mod project_item;
pub mod time_log_entry;
pub mod user;
pub mod workspace;

pub use assistant_import::AssistantImportRow;
pub use catalog_family::CatalogFamilyRow;
pub use category::CategoryRow;
pub use commercial_receipt::{CommercialReceiptRow, ListedReceiptRow};
pub use company_link::CompanyLinkRow;
pub use contact_company::ContactCompanyRow;
pub use contact_person::ContactPersonRow;
pub use credit_allowance::CreditAllowanceRow;
pub use document::DocumentRow;
pub use document_type::DocumentTypeRow;
pub use global_company::GlobalCompanyRow;
pub use item_column::ItemColumnRow;
pub use membership::MembershipRow;
pub use product_type::ProductTypeRow;
pub use product_type_column::ProductTypeColumnRow;
pub use project::ProjectRow;
pub use project_area::ProjectAreaRow;
pub use project_item::ProjectItemRow;
pub use time_log_entry::{TimeLogCellRow, TimeLogEntryRow};
pub use user::UserRow;
pub use workspace::WorkspaceRow;
