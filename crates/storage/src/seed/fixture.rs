//! The fixture file as serde reads it, after the schema has accepted it.
//!
//! Field names are the file's (camelCase); ids and timestamps stay strings here and are
//! parsed when the load plan is built, so a bad value is reported with its record.

use serde::Deserialize;
use serde_json::Value;

/// The whole file. Every list is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Fixture {
    pub users: Vec<User>,
    pub workspaces: Vec<Workspace>,
    pub projects: Vec<Project>,
    pub document_types: Vec<DocumentType>,
    pub documents: Vec<Document>,
    pub catalog_families: Vec<CatalogFamily>,
    pub project_items: Vec<ProjectItem>,
    pub assistant_imports: Vec<AssistantImport>,
    pub global_companies: Vec<GlobalCompany>,
    pub categories: Vec<Category>,
    pub item_columns: Vec<ItemColumn>,
    pub product_type_columns: Vec<ProductTypeColumn>,
    pub contact_companies: Vec<ContactCompany>,
    pub company_links: Vec<CompanyLink>,
    pub commercial_receipts: Vec<CommercialReceipt>,
    pub credit_allowances: Vec<CreditAllowance>,
    pub time_log_entries: Vec<TimeLogEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct User {
    pub id: String,
    pub email: String,
    pub display_name: String,
    #[serde(default)]
    pub platform_admin: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Workspace {
    pub id: String,
    pub name: String,
    pub member_ids: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Area {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Project {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub areas: Vec<Area>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DocumentType {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub scope: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Document {
    pub id: String,
    pub workspace_id: String,
    pub project_id: Option<String>,
    pub company_id: Option<String>,
    pub scope: String,
    pub type_id: Option<String>,
    pub source: String,
    pub status: String,
    pub name: String,
    pub notes: String,
    pub is_confidential: bool,
    pub phases: Vec<String>,
    pub item_ids: Vec<String>,
    pub external_url: Option<String>,
    pub original_filename: Option<String>,
    pub mime_type: Option<String>,
    pub size_bytes: Option<i64>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub version: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct VersionedRef {
    pub id: String,
    pub version: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CatalogFamily {
    pub id: String,
    pub workspace_id: String,
    pub parent_family_id: Option<String>,
    pub name: String,
    pub description: String,
    pub brand: String,
    pub model_number: String,
    pub finish: String,
    pub material: String,
    pub lead_time: String,
    pub notes: String,
    pub version: i64,
    pub primary_item: Option<VersionedRef>,
    pub primary_family_source: Option<VersionedRef>,
    pub primary_item_source: Option<VersionedRef>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProjectItem {
    pub id: String,
    pub project_id: String,
    pub family_id: String,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ImportTarget {
    pub kind: String,
    pub project_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AssistantImport {
    pub id: String,
    pub workspace_id: String,
    pub target: ImportTarget,
    pub status: String,
    pub kind: String,
    pub version: i64,
    pub analysis_revision: i64,
    pub conversation: Value,
    pub document: Value,
    pub progress: Value,
    pub created_at: String,
    pub updated_at: String,
    pub takeoff: Value,
    pub source_selection: Value,
    pub column_mappings: Value,
    pub value_mappings: Value,
    pub review_draft: Value,
    pub publish_result: Value,
    pub source_snapshot: Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GlobalCompany {
    pub id: String,
    pub name: String,
    pub primary_type: String,
    pub legal_name: String,
    pub country: String,
    pub aliases: Vec<String>,
    pub domains: Vec<String>,
    pub retired_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProductType {
    pub id: String,
    pub name: String,
    pub code: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Category {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub code: Option<String>,
    pub revision: i64,
    pub product_types: Vec<ProductType>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ItemColumn {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProductTypeColumn {
    pub product_type_id: String,
    pub item_column_id: String,
    pub is_active: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContactPerson {
    pub id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContactCompany {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub tags: Vec<String>,
    pub status: String,
    pub primary_person_id: Option<String>,
    pub persons: Vec<ContactPerson>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CompanyLink {
    pub id: String,
    pub workspace_id: String,
    pub main_company_id: String,
    pub rep_company_id: String,
    pub main_person_id: String,
    pub rep_person_id: String,
    pub status: String,
    pub created_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CommercialReceipt {
    pub id: String,
    pub workspace_id: String,
    pub project_id: String,
    pub project_item_id: String,
    pub project_item_name: String,
    pub family_id: String,
    pub family_name: String,
    pub primary_image_url: String,
    pub actor_name: String,
    pub outcome: String,
    pub fields: Value,
    pub release: Value,
    pub created_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreditAllowance {
    pub workspace_id: String,
    pub user_id: String,
    pub cycle: String,
    pub used_credits: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TimeLogEntry {
    pub id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub project_id: String,
    pub date: String,
    pub phase: String,
    pub hours: String,
    pub note: String,
    pub billable: bool,
    pub version: i64,
}
