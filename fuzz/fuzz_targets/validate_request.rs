//! Fuzz target: the request-validation entry point, `Contract::validate`, which every
//! operation's request passes through before any handler runs (strict JSON parsing with
//! duplicate keys refused, then the document's schemas).
//!
//! Rules: any input must come back as `Ok` or a list of violations, never a panic, an
//! abort, or a stack overflow. The first byte picks the operation, the bytes up to the
//! first NUL are the query string, the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use wpds_contract::validation::{Contract, RawRequest};

/// Every operation of the document, with plausible path parameters.
const OPERATIONS: &[(&str, &[(&str, &str)])] = &[
    ("assignDocumentType", &[("workspaceId", "1"), ("projectId", "7"), ("documentId", "12")]),
    ("refreshToken", &[]),
    ("bulkEditCatalogFamilies", &[("workspaceId", "1")]),
    ("createCrossProjectReportExport", &[("workspaceId", "1")]),
    ("replaceTakeoffMappings", &[("workspaceId", "1"), ("importId", "88")]),
    ("retireGlobalCompany", &[("companyId", "204")]),
    ("patchCategorySettings", &[("workspaceId", "1"), ("categoryId", "3")]),
    ("createCompanyLink", &[("workspaceId", "1")]),
    ("setOwnTimeLogCell", &[("workspaceId", "1")]),
    ("resetAssistantCreditAllowance", &[("workspaceId", "1")]),
    ("listCommercialReceipts", &[("workspaceId", "1"), ("projectId", "7")]),
];

fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| Contract::load().expect("the document's schemas compile"))
}

fuzz_target!(|data: &[u8]| {
    let _ = wpds_contract::strict_json::parse(data);
    let Some((&selector, rest)) = data.split_first() else { return };
    let (id, path) = OPERATIONS[usize::from(selector) % OPERATIONS.len()];
    let (query, body) = match rest.iter().position(|b| *b == 0) {
        Some(nul) => (&rest[..nul], &rest[nul + 1..]),
        None => (&[][..], rest),
    };
    let query = String::from_utf8_lossy(query);
    let _ = contract().validate(id, RawRequest { path, query: &query, headers: &(), body: Some(body) });
});
